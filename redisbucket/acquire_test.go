package redisbucket_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// waitQueued waits until n Acquire callers wait in line behind the head.
// The line has no hook to wait on; this polls its length, bounded in time.
func waitQueued(t *testing.T, waiting func() int64, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for waiting() < n {
		if time.Now().After(deadline) {
			t.Fatalf("queued %d, want %d", waiting(), n)
		}
		runtime.Gosched()
	}
}

// The tests named TestAcquire check deciding step by step
// (WithoutReservations), where waiters queue in their process's line; the
// tests named TestReserve check the default.
func TestAcquireFIFO(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	b := r.bucket("fifo", 5, throttle.Per(1, time.Second), redisbucket.WithoutReservations())
	if ok, _ := b.TryAcquire(5); !ok {
		t.Fatal("full bucket refused")
	}
	order := make(chan string, 3)
	errs := make(chan error, 3)
	start := func(name string, cost int64) {
		go func() {
			err := b.Acquire(ctx, cost)
			order <- name
			errs <- err
		}()
	}
	start("A5", 5)
	if err := r.fc.BlockUntilContext(ctx, 1); err != nil { // A sleeps on its timer
		t.Fatal(err)
	}
	start("B1", 1)
	waitQueued(t, func() int64 { return redisbucket.Queued(b) }, 1)
	start("C1", 1)
	waitQueued(t, func() int64 { return redisbucket.Queued(b) }, 2)

	// One token accrues: B and C could pass, but A came first.
	r.advance(time.Second)
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("TryAcquire jumped the queue")
	}
	r.advance(4 * time.Second)
	if got := <-order; got != "A5" {
		t.Fatalf("first grant %s", got)
	}
	for _, want := range []string{"B1", "C1"} {
		if err := r.fc.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		r.advance(time.Second)
		if got := <-order; got != want {
			t.Fatalf("grant %s, want %s", got, want)
		}
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestAcquireDeadlineFailsFast(t *testing.T) {
	r := newRig(t)
	b := r.bucket("deadline", 1, throttle.Per(1, time.Second))
	b.TryAcquire(1)
	ctx, cancel := context.WithDeadline(context.Background(), r.fc.Now().Add(500*time.Millisecond))
	defer cancel()
	err := b.Acquire(ctx, 1)
	var we *throttle.WaitError
	if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	if we.Wait != time.Second {
		t.Fatalf("wait %v", we.Wait)
	}
	r.advance(time.Second)
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("the failed Acquire spent tokens")
	}
}

func TestAcquireCancelledWaiterSpendsNothing(t *testing.T) {
	r := newRig(t)
	b := r.bucket("cancel", 2, throttle.Per(1, time.Second), redisbucket.WithoutReservations())
	b.TryAcquire(2)
	bg := context.Background()
	ctxA, cancelA := context.WithCancel(bg)
	errA := make(chan error, 1)
	go func() { errA <- b.Acquire(ctxA, 2) }()
	if err := r.fc.BlockUntilContext(bg, 1); err != nil {
		t.Fatal(err)
	}
	errB := make(chan error, 1)
	go func() { errB <- b.Acquire(bg, 1) }()
	waitQueued(t, func() int64 { return redisbucket.Queued(b) }, 1)
	cancelA()
	if err := <-errA; !errors.Is(err, context.Canceled) {
		t.Fatalf("A: %v", err)
	}
	// B is the head now and sleeps for its one token.
	if err := r.fc.BlockUntilContext(bg, 1); err != nil {
		t.Fatal(err)
	}
	r.advance(time.Second)
	if err := <-errB; err != nil {
		t.Fatal(err)
	}
	r.advance(time.Second)
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("the cancelled waiter spent tokens")
	}
}

func TestAcquireNoRefill(t *testing.T) {
	r := newRig(t)
	b := r.bucket("zero", 3, throttle.Per(0, time.Second))
	ctx := context.Background()
	if err := b.Acquire(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := b.Acquire(ctx, 1); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
		t.Fatalf("err %v", err)
	}
	if _, err := b.WaitTime(1); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
		t.Fatalf("WaitTime err %v", err)
	}
}

// Many local waiters are all served, in order, at the bucket's rate.
func TestAcquireManyWaiters(t *testing.T) {
	r := newRig(t)
	b := r.bucket("many", 1, throttle.Per(100, time.Second), redisbucket.WithoutReservations())
	b.TryAcquire(1)
	ctx := context.Background()
	const n = 50
	done := make(chan int, n)
	for i := range n {
		go func() {
			if err := b.Acquire(ctx, 1); err != nil {
				t.Error(err)
			}
			done <- i
		}()
		if i == 0 {
			if err := r.fc.BlockUntilContext(ctx, 1); err != nil {
				t.Fatal(err)
			}
		} else {
			waitQueued(t, func() int64 { return redisbucket.Queued(b) }, int64(i))
		}
	}
	for i := range n {
		if err := r.fc.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		r.advance(10 * time.Millisecond)
		if got := <-done; got != i {
			t.Fatalf("grant %d went to waiter %d", i, got)
		}
	}
	if s := b.Stats(); s.Granted != n+1 || s.Calls > 2*n+2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestObserverEvents(t *testing.T) {
	r := newRig(t)
	var rec recorder
	b := r.bucket("obs", 1, throttle.Per(1, time.Second), redisbucket.WithObserver(&rec))
	b.TryAcquire(1)
	b.TryAcquire(1)
	got := rec.kinds()
	if fmt.Sprint(got) != fmt.Sprint([]string{"granted/redis", "rejected/redis"}) {
		t.Fatalf("events %v", got)
	}
}
