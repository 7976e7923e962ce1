package throttle

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// fixedDeadline is a context whose deadline Acquire reads but which no
// timer ends: an Acquire that should fail fast on it and queues instead
// stays queued until the test cancels it, where a timed context would hide
// the difference behind a plain context error.
type fixedDeadline struct {
	context.Context
	at time.Time
}

func (c fixedDeadline) Deadline() (time.Time, bool) { return c.at, true }

// wantFailFast runs acquire with a deadline d from now and checks that it
// returns at once a *WaitError of wait, having queued nothing. queued
// reports the length of the queue acquire would join.
func wantFailFast(t *testing.T, clk *clockwork.FakeClock, d, wait time.Duration, queued func() int, acquire func(context.Context) error) {
	t.Helper()
	parent, cancel := context.WithCancel(t.Context())
	defer cancel()
	ctx := fixedDeadline{parent, clk.Now().Add(d)}
	before := queued()
	errc := make(chan error, 1)
	returned := make(chan struct{})
	go func() {
		errc <- acquire(ctx)
		close(returned)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for queued() == before {
		select {
		case <-returned:
			var we *WaitError
			if err := <-errc; !errors.As(err, &we) || we.Wait != wait {
				t.Fatalf("Acquire with a deadline in %v = %v, want a *WaitError of %v", d, err, wait)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("Acquire neither returned nor queued")
		}
		runtime.Gosched()
	}
	cancel()
	<-returned
	t.Fatalf("Acquire with a deadline in %v queued (returned %v), want a *WaitError of %v at once", d, <-errc, wait)
}

// TestFailFastAfterFailFast is issue 12's reproduction: after one Acquire
// failed fast with nobody queued, spending from the levels must not leave
// the next Acquire with the projection the first one made. Nothing here
// calls WaitTime or Tokens before the second Acquire, since both used to
// refresh the projection and hide the bug.
func TestFailFastAfterFailFast(t *testing.T) {
	type target struct {
		try     func(int64) bool
		acquire func(context.Context, int64) error
		wait    func(int64) time.Duration
		queued  func() int
	}
	cases := map[string]func(clockwork.Clock) target{
		"Bucket": func(clk clockwork.Clock) target {
			b, _ := New(100, Per(100, time.Second), WithClock(clk))
			return target{
				try:     func(c int64) bool { ok, _ := b.TryAcquire(c); return ok },
				acquire: func(ctx context.Context, c int64) error { return b.Acquire(ctx, c) },
				wait:    func(c int64) time.Duration { d, _ := b.WaitTime(c); return d },
				queued:  b.queued,
			}
		},
		"Limiter": func(clk clockwork.Clock) target {
			a, _ := New(100, Per(100, time.Second), WithClock(clk), WithName("tokens"))
			r, _ := New(1000, Per(1000, time.Second), WithClock(clk), WithName("requests"))
			l, _ := NewLimiter(r, a)
			return target{
				try:     func(c int64) bool { ok, _ := l.TryAcquire(1, c); return ok },
				acquire: func(ctx context.Context, c int64) error { _, err := l.Acquire(ctx, 1, c); return err },
				wait:    func(c int64) time.Duration { d, _ := l.WaitTime(1, c); return d },
				queued:  a.queued,
			}
		},
		"Keyed": func(clk clockwork.Clock) target {
			k := NewKeyed(func(string) []Limit {
				return []Limit{{Name: "tokens", Capacity: 100, Rate: Per(100, time.Second)}}
			}, WithClock(clk))
			return target{
				try:     func(c int64) bool { ok, _ := k.TryAcquire("a", c); return ok },
				acquire: func(ctx context.Context, c int64) error { _, err := k.Acquire(ctx, "a", c); return err },
				wait:    func(c int64) time.Duration { d, _ := k.WaitTime("a", c); return d },
				queued:  func() int { return k.Limiter("a").bs[0].queued() },
			}
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			clk := newClock()
			tg := mk(clk)
			if !tg.try(100) {
				t.Fatal("a full bucket refused its capacity")
			}
			wantFailFast(t, clk, 100*time.Millisecond, 500*time.Millisecond, tg.queued,
				func(ctx context.Context) error { return tg.acquire(ctx, 50) })
			clk.Advance(time.Second)
			if !tg.try(100) {
				t.Fatal("TryAcquire(100) refused after a second's refill")
			}
			wantFailFast(t, clk, 200*time.Millisecond, 500*time.Millisecond, tg.queued,
				func(ctx context.Context) error { return tg.acquire(ctx, 50) })
			if d := tg.wait(1); d != 10*time.Millisecond {
				t.Fatalf("WaitTime(1) = %v, want 10ms", d)
			}
			if tg.try(1) {
				t.Fatal("TryAcquire(1) granted on an empty bucket")
			}
		})
	}
}
