package pool_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/pool"
)

func TestQuarantineTakesMemberOutUntilItsEnd(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	p := newPool(t, pool.Member{Name: "a", Gate: key(t, clk, 100, 1000)}, pool.Member{Name: "b", Gate: key(t, clk, 100, 1000)})
	if err := p.Quarantine("c", t0.Add(time.Hour)); err == nil {
		t.Fatal("Quarantine of no member succeeded")
	}
	if err := p.Quarantine("a", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	p.Quarantine("a", t0.Add(time.Minute)) // earlier: changes nothing
	for range 50 {
		if m := take(t, p, 1, 1); m != "b" {
			t.Fatalf("served by %s in quarantine", m)
		}
	}
	if got := p.Quarantined("a"); !got.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Quarantined(a) = %v, want %v", got, t0.Add(time.Hour))
	}
	clk.Advance(time.Hour)
	if got := p.Quarantined("a"); !got.IsZero() {
		t.Fatalf("Quarantined(a) = %v after its end", got)
	}
	if m := take(t, p, 1, 1); m != "a" {
		t.Fatalf("served by %s, want a back (more left)", m)
	}
}

func TestAllQuarantinedPastDeadline(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	p := newPool(t, pool.Member{Name: "a", Gate: key(t, clk, 100, 1000)}, pool.Member{Name: "b", Gate: key(t, clk, 100, 1000)})
	p.Quarantine("a", t0.Add(24*time.Hour))
	p.Quarantine("b", t0.Add(time.Hour))
	if _, ok, err := p.TryAcquirePermit(1, 1); ok || err != nil {
		t.Fatalf("TryAcquirePermit = %v, %v with every member quarantined", ok, err)
	}
	if w, _ := p.WaitTime(1, 1); w != time.Hour {
		t.Fatalf("WaitTime = %v, want 1h (b's end)", w)
	}
	ctx, cancel := clockwork.WithTimeout(context.Background(), clk, 30*time.Minute)
	defer cancel()
	_, err := p.Acquire(ctx, 1, 1)
	var ue *pool.UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want an UnavailableError matching DeadlineExceeded", err)
	}
	want := []pool.Unavailable{{"a", t0.Add(24 * time.Hour), true}, {"b", t0.Add(time.Hour), true}}
	if len(ue.Members) != 2 || ue.Members[0] != want[0] || ue.Members[1] != want[1] {
		t.Fatalf("members %+v, want %+v", ue.Members, want)
	}
}

func TestAllQuarantinedWaitsForFirstBack(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	p := newPool(t, pool.Member{Name: "a", Gate: key(t, clk, 100, 1000)}, pool.Member{Name: "b", Gate: key(t, clk, 100, 1000)})
	p.Quarantine("a", t0.Add(2*time.Hour))
	p.Quarantine("b", t0.Add(time.Hour))
	ctx, cancel := clockwork.WithTimeout(context.Background(), clk, 90*time.Minute)
	defer cancel()
	done := make(chan string, 1)
	go func() {
		pm, err := p.Acquire(ctx, 1, 1)
		if err != nil {
			done <- err.Error()
			return
		}
		done <- pm.(*pool.Permit).Member().Name
	}()
	// The context's own timer and the Pool's.
	if err := clk.BlockUntilContext(ctx, 2); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if m := <-done; m != "b" {
		t.Fatalf("Acquire got %s, want b at the end of its quarantine", m)
	}
}

func TestWithQuarantine(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	ms := []pool.Member{{Name: "a", Gate: key(t, clk, 1, 1)}}
	if p := newPool(t, ms...); p.DefaultQuarantine() != time.Hour {
		t.Fatalf("DefaultQuarantine = %v, want 1h", p.DefaultQuarantine())
	}
	p, err := pool.New(ms, pool.WithQuarantine(24*time.Hour))
	if err != nil || p.DefaultQuarantine() != 24*time.Hour {
		t.Fatalf("WithQuarantine(24h): %v, %v", p, err)
	}
	if _, err := pool.New(ms, pool.WithQuarantine(0)); !errors.Is(err, throttle.ErrInvalidOption) {
		t.Fatalf("WithQuarantine(0): %v, want ErrInvalidOption", err)
	}
}
