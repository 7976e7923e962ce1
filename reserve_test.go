package throttle

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

func TestReserve(t *testing.T) {
	b, clk := newFake(t, 10, Per(10, time.Second)) // a token every 100ms
	r1, err := b.Reserve(10)                       // at once
	if err != nil || !r1.OK() || r1.Delay() != 0 {
		t.Fatalf("Reserve(10) on a full bucket: %v, OK %v, Delay %v", err, r1.OK(), r1.Delay())
	}
	r2, _ := b.Reserve(5) // at 500ms
	r3, _ := b.Reserve(3) // at 800ms
	if d := r2.Delay(); d != 500*time.Millisecond {
		t.Fatalf("r2.Delay = %v", d)
	}
	if d := r3.Delay(); d != 800*time.Millisecond {
		t.Fatalf("r3.Delay = %v", d)
	}
	// FIFO: nobody jumps the reservations, and WaitTime counts them.
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("TryAcquire jumped the reservations")
	}
	if d, _ := b.WaitTime(2); d != time.Second {
		t.Fatalf("WaitTime(2) = %v, want 1s", d)
	}
	// Cancelling r2 re-times r3 as if r2 had never been made.
	r2.Cancel()
	if r2.OK() || r2.Delay() != math.MaxInt64 {
		t.Fatalf("cancelled: OK %v, Delay %v", r2.OK(), r2.Delay())
	}
	if d := r3.Delay(); d != 300*time.Millisecond {
		t.Fatalf("r3.Delay after r2's cancel = %v, want 300ms", d)
	}
	clk.Advance(300 * time.Millisecond)
	if d := r3.Delay(); d != 0 {
		t.Fatalf("r3.Delay at its instant = %v", d)
	}
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("r3's tokens were not taken at its instant")
	}
	// Cancelling a granted reservation gives its tokens back.
	r3.Cancel()
	r3.Cancel() // twice: nothing more
	if d, _ := b.WaitTime(3); d != 0 {
		t.Fatalf("WaitTime(3) after cancelling granted r3 = %v", d)
	}
	if ok, _ := b.TryAcquire(4); ok {
		t.Fatal("a double Cancel gave back twice")
	}
	// Errors, as Acquire's.
	if _, err := b.Reserve(11); !errors.Is(err, ErrCostExceedsCapacity) {
		t.Fatalf("Reserve(11) = %v", err)
	}
	if _, err := b.Reserve(0); !errors.Is(err, ErrInvalidCost) {
		t.Fatalf("Reserve(0) = %v", err)
	}
	z, _ := newFake(t, 1, Per(0, time.Second))
	z.TryAcquire(1)
	if _, err := z.Reserve(1); !errors.Is(err, ErrCostExceedsCapacity) {
		t.Fatalf("Reserve on a spent bucket that never refills = %v", err)
	}
}

// TestReserveAheadOfWaiters queues Acquire calls behind reservations: the
// waiter is armed for its instant behind them, and served then.
func TestReserveAheadOfWaiters(t *testing.T) {
	b, clk := newFake(t, 4, Per(4, time.Second)) // a token every 250ms
	b.TryAcquire(4)
	r1, _ := b.Reserve(2) // 500ms
	r2, _ := b.Reserve(1) // 750ms
	out := make(chan result, 2)
	var wg sync.WaitGroup
	start(t, b, clk, t.Context(), 0, 2, out, &wg) // 1250ms
	if err := clk.BlockUntilContext(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if r1.Delay() != 0 || r2.Delay() != 0 {
		t.Fatal("reservations not granted by 1s")
	}
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(249 * time.Millisecond)
	select {
	case r := <-out:
		t.Fatalf("waiter served early: %+v", r)
	default:
	}
	clk.Advance(time.Millisecond)
	if r := <-out; r.err != nil || r.at != 1250*time.Millisecond {
		t.Fatalf("waiter: %+v, want a grant at 1.25s", r)
	}
	wg.Wait()

	// A reservation cancelled ahead of a waiter moves the waiter up.
	b.TryAcquire(4)
	base := clk.Since(t0)
	r3, _ := b.Reserve(4) // base+1s
	start(t, b, clk, t.Context(), 1, 1, out, &wg)
	clk.BlockUntilContext(t.Context(), 1)
	r3.Cancel()
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(250 * time.Millisecond)
	if r := <-out; r.err != nil || r.at != base+250*time.Millisecond {
		t.Fatalf("waiter behind a cancelled reservation: %+v", r)
	}
	wg.Wait()
}

func TestReserveLimiterAndFailure(t *testing.T) {
	l, clk := rpmTPM(t) // 3 requests, 100 tokens a second
	l.TryAcquire(3, 100)
	r, err := l.Reserve(1, 50)
	if err != nil {
		t.Fatal(err)
	}
	if d := r.Delay(); d != 500*time.Millisecond {
		t.Fatalf("Delay = %v, want the tokens limit's 500ms", d)
	}
	// A capacity set below the cost makes the reservation fail.
	if err := l.Bucket("tokens").SetCapacity(40); err != nil {
		t.Fatal(err)
	}
	if r.OK() || r.Delay() != math.MaxInt64 {
		t.Fatalf("after SetCapacity(40): OK %v, Delay %v", r.OK(), r.Delay())
	}
	r.Cancel() // not OK: nothing
	clk.Advance(time.Second)
	if ok, _ := l.TryAcquire(3, 40); !ok {
		t.Fatal("the failed reservation still holds the queue, or spent")
	}
}
