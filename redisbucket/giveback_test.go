package redisbucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// A give-back reaches Redis with whichever call of the process carries it
// next, and calls in flight at once are decided in the order they arrive:
// a waiter's call sent after the carrier may be refused before the
// give-back lands. The waiter then decides again when it lands, not at its
// timer. (TestTransportLLMBurstOnEstimates hung in CI on this: a peek of
// the Transport carried three settlements and landed just after the
// waiting head's refusal, and nothing settled after it.)
func TestGiveBackLandingWakesTheWaiter(t *testing.T) {
	r, l, hold := heldLimiter(t, "giveback-landing")
	ctx := context.Background()
	if _, err := l.Take(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if err := l.Settle([]int64{10}, []int64{0}); err != nil {
		t.Fatal(err)
	}
	// The carrier: a read of the levels, held before it is sent.
	hold.hold.Store(true)
	peeked := make(chan error, 1)
	go func() {
		_, err := l.Tokens(ctx)
		peeked <- err
	}()
	<-hold.entered
	taken := make(chan error, 1)
	go func() {
		_, err := l.Take(ctx, 5)
		taken <- err
	}()
	untilAsleep(t, r) // refused at level 0: five minutes to wait
	close(hold.release)
	if err := <-peeked; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-taken:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the give-back landed after the waiter's refusal and the waiter still sleeps, the clock standing still")
	}
	if got := levels(t, l)[0]; got != 5 {
		t.Fatalf("level %v after the give-back of 10 and a take of 5, want 5", got)
	}
}

// A batch of the fast path carries no give-back: one pending when it
// leaves stays for the next call that carries charges, not taken off and
// dropped with the batch's reply (which left the tokens spent for good).
func TestBatchLeavesTheGiveBack(t *testing.T) {
	_, l, hold := heldLimiter(t, "giveback-batch")
	ctx := context.Background()
	if _, err := l.Take(ctx, 8); err != nil {
		t.Fatal(err)
	}
	// One call in flight, held; the next acquisition joins the batch
	// behind it.
	hold.hold.Store(true)
	took := make(chan error, 2)
	go func() {
		_, err := l.Take(ctx, 1)
		took <- err
	}()
	<-hold.entered
	go func() {
		_, err := l.Take(ctx, 1)
		took <- err
	}()
	waitUntil(t, "the second take to join the batch", func() bool { return redisbucket.LimiterBatchWaiting(l) == 1 })
	if err := l.Settle([]int64{8}, []int64{0}); err != nil {
		t.Fatal(err)
	}
	close(hold.release)
	for range 2 {
		if err := <-took; err != nil {
			t.Fatal(err)
		}
	}
	if got := levels(t, l)[0]; got != 8 {
		t.Fatalf("level %v: 8 given back after the takes of 8, 1 and 1, want 8", got)
	}
}

// heldLimiter returns a Limiter of 10 tokens refilling at 1 a minute,
// deciding step by step (a reserved sleeper's give-backs are
// TestReservedSleeperCountsAGiveBackAppliedAfterIt's), on a client of its
// own whose next call, once armed, the returned blocking hook holds.
func heldLimiter(t *testing.T, id string) (*rig, *redisbucket.Limiter, *blocking) {
	r := newRig(t)
	client := r.be.Client()
	hold := &blocking{entered: make(chan struct{}), release: make(chan struct{})}
	client.AddHook(hold)
	l, err := redisbucket.NewLimiter(client, id, []redisbucket.Limit{
		{Name: "tokens", Capacity: 10, Rate: throttle.Per(1, time.Minute)},
	}, r.opts(redisbucket.WithoutReservations())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return r, l, hold
}
