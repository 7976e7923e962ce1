package throttle

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle/internal/testwait"
)

// result is what one Acquire returned, with the fake time it returned at.
type result struct {
	id  int
	err error
	at  time.Duration
}

// start runs Acquire(ctx, cost) in a goroutine and waits until it is queued
// (or returned at once), so that arrival order is deterministic.
func start(t *testing.T, b *Bucket, clk *clockwork.FakeClock, ctx context.Context, id int, cost int64, out chan<- result, wg *sync.WaitGroup) {
	t.Helper()
	before := b.queued()
	wg.Add(1)
	returned := make(chan struct{})
	go func() {
		defer wg.Done()
		err := b.Acquire(ctx, cost)
		out <- result{id: id, err: err, at: clk.Since(t0)}
		close(returned)
	}()
	awaitQueued(t, b, before, returned)
}

// awaitQueued yields until b's queue no longer holds before waiters, or
// returned is closed: the waiter just started has queued or is done.
func awaitQueued(t testing.TB, b *Bucket, before int, returned <-chan struct{}) {
	t.Helper()
	testwait.Queued(t, b.queued, before, returned)
}

func TestAcquireAtOnce(t *testing.T) {
	b, _ := newFake(t, 3, Per(1, time.Second))
	if err := b.Acquire(t.Context(), 3); err != nil {
		t.Fatal(err)
	}
	if got := b.Tokens(); got != 0 {
		t.Fatalf("level %v", got)
	}
}

func TestAcquireFIFO(t *testing.T) {
	b, clk := newFake(t, 5, Per(1, time.Second))
	b.TryAcquire(5)
	out := make(chan result, 10)
	var wg sync.WaitGroup
	start(t, b, clk, t.Context(), 0, 5, out, &wg) // heavy request first
	for i := 1; i <= 4; i++ {
		start(t, b, clk, t.Context(), i, 1, out, &wg)
	}
	// A token is available after 1s, but the cost-5 waiter is first in line:
	// neither the cost-1 waiters nor TryAcquire may take it.
	for s := 1; s <= 4; s++ {
		if err := clk.BlockUntilContext(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		if ok, _ := b.TryAcquire(1); ok {
			t.Fatalf("TryAcquire jumped the queue at %ds", s)
		}
	}
	if n := b.queued(); n != 5 {
		t.Fatalf("%d queued, want 5", n)
	}
	want := []struct {
		id int
		at time.Duration
	}{{0, 5 * time.Second}, {1, 6 * time.Second}, {2, 7 * time.Second}, {3, 8 * time.Second}, {4, 9 * time.Second}}
	for _, w := range want {
		clk.BlockUntilContext(t.Context(), 1)
		clk.Advance(w.at - clk.Since(t0))
		r := <-out
		if r.err != nil || r.id != w.id || r.at != w.at {
			t.Fatalf("got waiter %d at %v (err %v), want %d at %v", r.id, r.at, r.err, w.id, w.at)
		}
	}
	wg.Wait()
}

// TestOnlyTheHeadHasATimer queues 50 waiters: only the head has a timer
// armed, and each grant is served at its own instant.
func TestOnlyTheHeadHasATimer(t *testing.T) {
	b, clk := newFake(t, 1, Per(1, time.Second))
	b.TryAcquire(1)
	out := make(chan result, 50)
	var wg sync.WaitGroup
	for i := range 50 {
		start(t, b, clk, t.Context(), i, 1, out, &wg)
	}
	waitQueued(t, b, 50)
	if err := clk.BlockUntilContext(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	// A second timer would mean a waiter behind the head sleeps on the clock.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := clk.BlockUntilContext(ctx, 2); err == nil {
		t.Fatal("more than one waiter has a timer armed")
	}
	for i := range 50 {
		if err := clk.BlockUntilContext(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		if r := <-out; r.id != i || r.at != time.Duration(i+1)*time.Second {
			t.Fatalf("got %d at %v, want %d at %ds", r.id, r.at, i, i+1)
		}
	}
	wg.Wait()
}

// TestLateWakeKeepsTokens advances the clock far past the head's instant,
// as a late timer would: the waiters whose instants passed are all served,
// each at the instant its tokens existed, so the next one is not delayed.
func TestLateWakeKeepsTokens(t *testing.T) {
	b, clk := newFake(t, 1, Per(1000, time.Second)) // a token every 1ms
	b.TryAcquire(1)
	out := make(chan result, 10)
	var wg sync.WaitGroup
	for i := range 10 {
		start(t, b, clk, t.Context(), i, 1, out, &wg)
	}
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(5*time.Millisecond + 500*time.Microsecond) // the timer for 1ms fires 4.5ms late
	// One wake serves waiters 0 to 4; they return in any order.
	seen := map[int]bool{}
	for range 5 {
		r := <-out
		if r.id > 4 || r.err != nil || seen[r.id] {
			t.Fatalf("got %+v, want one of waiters 0-4", r)
		}
		seen[r.id] = true
	}
	// Waiter 5's token exists at exactly 6ms, not 5.5ms+1ms.
	clk.BlockUntilContext(t.Context(), 1)
	if d, _ := b.WaitTime(1); d != 5*time.Millisecond+500*time.Microsecond {
		t.Fatalf("WaitTime = %v, want 5.5ms (behind 4 queued waiters)", d)
	}
	clk.Advance(500*time.Microsecond - 1)
	select {
	case r := <-out:
		t.Fatalf("waiter %d served early", r.id)
	default:
	}
	clk.Advance(1)
	if r := <-out; r.id != 5 || r.at != 6*time.Millisecond {
		t.Fatalf("got %+v, want waiter 5 at 6ms", r)
	}
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(time.Second)
	for range 4 {
		<-out
	}
	wg.Wait()
}

func TestCancelInMiddle(t *testing.T) {
	b, clk := newFake(t, 2, Per(1, time.Second))
	b.TryAcquire(2)
	out := make(chan result, 10)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(t.Context())
	start(t, b, clk, t.Context(), 0, 2, out, &wg)
	start(t, b, clk, ctx, 1, 2, out, &wg)
	start(t, b, clk, t.Context(), 2, 2, out, &wg)
	cancel()
	if r := <-out; r.id != 1 || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("got %+v, want waiter 1 cancelled", r)
	}
	waitQueued(t, b, 2)
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(2 * time.Second)
	if r := <-out; r.id != 0 || r.at != 2*time.Second {
		t.Fatalf("got %+v, want waiter 0 at 2s", r)
	}
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(2 * time.Second)
	// The cancelled waiter spent nothing: waiter 2 moves up to 4s.
	if r := <-out; r.id != 2 || r.at != 4*time.Second {
		t.Fatalf("got %+v, want waiter 2 at 4s", r)
	}
	wg.Wait()
}

func TestCancelHeadHandsOver(t *testing.T) {
	b, clk := newFake(t, 5, Per(1, time.Second))
	b.TryAcquire(5)
	out := make(chan result, 10)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(t.Context())
	start(t, b, clk, ctx, 0, 5, out, &wg)
	start(t, b, clk, t.Context(), 1, 1, out, &wg)
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(time.Second) // one token: not enough for the head
	cancel()
	// The cancelled head hands over before it returns, so the two results
	// may arrive in either order.
	got := map[int]result{}
	for range 2 {
		r := <-out
		got[r.id] = r
	}
	if r := got[0]; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("got %+v, want waiter 0 cancelled", r)
	}
	// The token that accrued is the next waiter's at once.
	if r := got[1]; r.id != 1 || r.err != nil || r.at != time.Second {
		t.Fatalf("got %+v, want waiter 1 at 1s", r)
	}
	if got := b.Tokens(); got != 0 {
		t.Fatalf("level %v, want 0", got)
	}
	wg.Wait()
}

func TestDeadlineFailsFast(t *testing.T) {
	b, clk := newFake(t, 2, Per(1, time.Second))
	b.TryAcquire(2)
	ctx, cancel := clockwork.WithTimeout(t.Context(), clk, 1500*time.Millisecond)
	defer cancel()
	err := b.Acquire(ctx, 2) // needs 2s
	var we *WaitError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &we) || we.Wait != 2*time.Second {
		t.Fatalf("Acquire = %v, want a WaitError of 2s", err)
	}
	// Nothing spent, and a deadline that is long enough passes.
	ctx2, cancel2 := clockwork.WithTimeout(t.Context(), clk, time.Second+time.Millisecond)
	defer cancel2()
	done := make(chan error, 1)
	go func() { done <- b.Acquire(ctx2, 1) }()
	clk.BlockUntilContext(t.Context(), 3) // two context timers and the head
	clk.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("Acquire with a sufficient deadline = %v", err)
	}
}

func TestDeadlineCountsQueue(t *testing.T) {
	b, clk := newFake(t, 1, Per(1, time.Second))
	b.TryAcquire(1)
	out := make(chan result, 10)
	var wg sync.WaitGroup
	for i := range 3 {
		start(t, b, clk, t.Context(), i, 1, out, &wg)
	}
	// Behind three waiters, a fourth token exists at 4s.
	ctx, cancel := clockwork.WithTimeout(t.Context(), clk, 3*time.Second)
	defer cancel()
	var we *WaitError
	if err := b.Acquire(ctx, 1); !errors.As(err, &we) || we.Wait != 4*time.Second {
		t.Fatalf("Acquire = %v, want WaitError of 4s", err)
	}
	if d, _ := b.WaitTime(1); d != 4*time.Second {
		t.Fatalf("WaitTime = %v, want 4s", d)
	}
	for range 3 {
		clk.BlockUntilContext(t.Context(), 2)
		clk.Advance(time.Second)
		<-out
	}
	wg.Wait()
}

func TestCancelledContextSpendsNothing(t *testing.T) {
	b, _ := newFake(t, 1, Per(1, time.Second))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.Acquire(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v", err)
	}
	if got := b.Tokens(); got != 1 {
		t.Fatalf("level %v", got)
	}
}

// TestRealClock is one of the two tests of the core's waiters on the real
// clock (TestRealClockTimers is the other): 200 grants at 1000/s from
// capacity 1 take at least 199ms and not much more.
func TestRealClock(t *testing.T) {
	b, err := New(1, Per(1000, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	b.TryAcquire(1)
	begin := time.Now()
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				if err := b.Acquire(t.Context(), 1); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	if elapsed < 200*time.Millisecond-time.Millisecond {
		t.Fatalf("200 grants in %v: over-admitted", elapsed)
	}
	if elapsed > 400*time.Millisecond {
		t.Fatalf("200 grants in %v: far below the rate", elapsed)
	}
	t.Logf("200 grants at 1000/s in %v", elapsed)
}
