package redisbucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// A waiter whose reservation found Redis unavailable, and whom the
// failure policy refused, reserves again once Redis answers: it takes its
// place in the fleet's queue. Deciding step by step instead, it would
// need a level that other processes' reservations keep below zero, and
// starve (at 32 and 64 processes, calls passed their 30 s deadline so).
func TestReserveAfterFailureTakesItsPlace(t *testing.T) {
	r, m := miniRig(t)
	limits := []redisbucket.Limit{{Name: "requests", Capacity: 1, Rate: throttle.Per(10, time.Second)}}
	a, err := redisbucket.NewLimiter(miniClient(t, m), "rfail", limits, r.opts(redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := redisbucket.NewLimiter(miniClient(t, m), "rfail", limits, append(r.opts(redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0)),
		redisbucket.WithFailurePolicy(redisbucket.FailLocal(throttle.Per(1, time.Second))),
		redisbucket.WithProbeBackoff(50*time.Millisecond, 50*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ok, err := a.TryAcquire(1); !ok || err != nil {
		t.Fatalf("empty the bucket: %v %v", ok, err)
	}
	m.SetError("LOADING")
	b.TryAcquire(1) // spends b's local bucket, if it held anything
	bDone := make(chan error, 1)
	go func() {
		_, err := b.Acquire(context.Background(), 1) // refused by the policy, waits
		bDone <- err
	}()
	if err := r.fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	m.SetError("")
	reserve := func(n int) {
		for range n {
			go func() {
				if _, err := a.Acquire(context.Background(), 1); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	reserve(15) // a's queue: +100ms ... +1500ms
	if err := r.fc.BlockUntilContext(ctx, 16); err != nil {
		t.Fatal(err)
	}
	r.advance(time.Second) // b's local wait ends; a's first 10 go
	if err := r.fc.BlockUntilContext(ctx, 6); err != nil {
		t.Fatal(err)
	}
	reserve(10) // after b's step: behind it if b reserved
	if err := r.fc.BlockUntilContext(ctx, 16); err != nil {
		t.Fatal(err)
	}
	// b's place: behind a's first 15 and the token its policy granted
	// while Redis was down, charged to Redis when b reached it again.
	r.advance(700 * time.Millisecond)
	select {
	case err := <-bDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("b was not granted at +1.7 s, its place in the queue: it decided step by step against a's reservations")
	}
	r.advance(time.Second) // a's last 10
	if err := r.fc.BlockUntilContext(ctx, 0); err != nil {
		t.Fatal(err)
	}
}

// When the breaker opens, the local share starts as deep in debt as its
// share of the fleet's queue of reservations: their sleepers go at their
// instants whether Redis answers or not, and local grants begin only as
// the queue would have drained. Started at zero, they came on top of the
// queue (8 processes through a kill: a vendor 429 in every run).
func TestFailLocalStartsInTheQueuesDebt(t *testing.T) {
	r, m := miniRig(t)
	b, slept := queuedBucket(t, r, m, "qdebt", 5) // reserved for +500ms
	m.SetError("LOADING")
	localSteps(t, r, b, "Redis down and 5 tokens reserved", []localStep{
		{0, false}, {100 * time.Millisecond, false}, {400 * time.Millisecond, false}, {600 * time.Millisecond, true}})
	if err := <-slept; err != nil {
		t.Fatalf("the reserved sleeper: %v", err)
	}
}

// The fleet's queue drains from the instant Redis was lost, not from the
// breaker's opening: the local share starts at its share of the queue as
// held until the loss and drained since, so local grants begin as the
// queue ends, however late the process's first call after the loss. (8
// processes through a kill: a process whose waiters all slept through the
// loss opened its breaker half a second after it and granted nothing for
// the queue's length again; the vendor saw 0.5 s with few calls.)
func TestFailLocalQueueDrainsFromTheLoss(t *testing.T) {
	r, m := miniRig(t)
	b, slept := queuedBucket(t, r, m, "qloss", 10, // reserved for +1s
		redisbucket.WithCallTimeout(50*time.Millisecond), redisbucket.WithBreakerPatience(0))
	breaks := redisbucket.FeedBreaks(b)
	m.Close() // the loss, at +0: the pause feed breaks
	for deadline := time.Now().Add(10 * time.Second); redisbucket.FeedBreaks(b) == breaks; {
		if time.Now().After(deadline) {
			t.Fatal("the pause feed did not break when Redis closed")
		}
	}
	// The first call since, at +600 ms, fails and opens the breaker: the
	// queue, 10 tokens at +0, is 5 at most (the estimate is late by the
	// call timeout), and the share's first token comes at +1.2 s.
	localSteps(t, r, b, "Redis gone since +0 and 10 tokens reserved until +1s", []localStep{
		{600 * time.Millisecond, false}, {900 * time.Millisecond, false}, {1200 * time.Millisecond, true}})
	if err := <-slept; err != nil {
		t.Fatalf("the reserved sleeper: %v", err)
	}
}

// queuedBucket is a Bucket of 10 at 10/s with reservations, FailLocal at the
// whole rate and no probe within a minute, emptied, and an Acquire of n
// asleep on its reservation; slept receives that Acquire's error.
func queuedBucket(t *testing.T, r *rig, m *miniredis.Miniredis, id string, n int64, more ...redisbucket.Option) (b *redisbucket.Bucket, slept <-chan error) {
	t.Helper()
	opts := append([]redisbucket.Option{redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0),
		redisbucket.WithFailurePolicy(redisbucket.FailLocal(throttle.Per(10, time.Second))),
		redisbucket.WithProbeBackoff(time.Minute, time.Minute)}, more...)
	b, err := redisbucket.New(miniClient(t, m), id, 10, throttle.Per(10, time.Second), r.opts(opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if ok, err := b.TryAcquire(10); !ok || err != nil {
		t.Fatalf("empty the bucket: %v %v", ok, err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Acquire(context.Background(), n) }()
	untilAsleep(t, r)
	return b, done
}

// localStep is a TryAcquire(1) at an instant after a step's start, and
// whether it is granted.
type localStep struct {
	at time.Duration
	ok bool
}

// localSteps advances the rig to each step's instant and checks its
// TryAcquire(1) on b; what says what state b is in.
func localSteps(t *testing.T, r *rig, b *redisbucket.Bucket, what string, steps []localStep) {
	t.Helper()
	var at time.Duration
	for _, step := range steps {
		r.advance(step.at - at)
		at = step.at
		if ok, err := b.TryAcquire(1); ok != step.ok || err != nil {
			t.Fatalf("+%v with %s: TryAcquire(1) = %v, %v, want %v (stats %+v)", at, what, ok, err, step.ok, b.Stats())
		}
	}
}
