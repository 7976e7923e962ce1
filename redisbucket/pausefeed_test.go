package redisbucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// A pause one process stores reaches another's reserved sleeper through
// the pause feed: the sleeper goes at the pause's end, not at its own
// instant, and asks Redis nothing at its instant.
func TestPauseFeedHoldsReservedSleepers(t *testing.T) {
	r := newRig(t)
	limits := []redisbucket.Limit{{Name: "requests", Capacity: 2, Rate: throttle.Per(10, time.Second)}}
	a := r.limiter("feed", limits, redisbucket.WithReservations())
	b := r.limiter("feed", limits, redisbucket.WithReservations())
	ctx := context.Background()
	if ok, err := a.TryAcquire(2); !ok || err != nil {
		t.Fatalf("empty the bucket: %v %v", ok, err)
	}
	start := r.fc.Now()
	granted := make(chan time.Time, 1)
	go func() {
		p, err := b.Acquire(ctx, 1) // reserved for +100ms
		if err != nil {
			t.Error(err)
		} else {
			p.Settle(1)
		}
		granted <- r.fc.Now()
	}()
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.fc.BlockUntilContext(bctx, 1); err != nil {
		t.Fatal(err)
	}
	calls := b.Stats().Calls
	a.PauseUntil(start.Add(time.Second))
	// The message arrives on b's feed goroutine: wait for it, bounded.
	waitUntil(t, "the pause on the other process's feed", func() bool { return redisbucket.PauseHeard(b) != 0 })
	r.advance(100 * time.Millisecond) // the reservation's own instant
	if err := r.fc.BlockUntilContext(bctx, 1); err != nil {
		t.Fatal(err)
	}
	notGranted(t, granted, start, "inside the pause")
	// The pause holds the refill too: the instant moves by its length.
	r.advance(time.Second)
	if at := <-granted; at.Sub(start) < time.Second {
		t.Fatalf("granted at +%v, before the pause's end", at.Sub(start))
	}
	// The reservation only (the settlement is one more): no look at the
	// instant.
	if n := b.Stats().Calls - calls; n != 1 {
		t.Fatalf("%d calls after the reservation, want 1 (its settlement)", n)
	}
}

// A closed Limiter's feed is gone: its reserved sleepers ask Redis at
// their instants, and a pause stored meanwhile still holds them.
func TestPauseFeedClosedSleepersAsk(t *testing.T) {
	r := newRig(t)
	limits := []redisbucket.Limit{{Name: "requests", Capacity: 2, Rate: throttle.Per(10, time.Second)}}
	a := r.limiter("feedclosed", limits, redisbucket.WithReservations())
	b := r.limiter("feedclosed", limits, redisbucket.WithReservations())
	b.Close()
	if ok, err := a.TryAcquire(2); !ok || err != nil {
		t.Fatalf("empty the bucket: %v %v", ok, err)
	}
	start := r.fc.Now()
	granted := acquireAsleep(t, r, b)
	a.PauseUntil(start.Add(time.Second))
	r.advance(100 * time.Millisecond)
	untilAsleep(t, r) // asked, and sleeps on
	notGranted(t, granted, start, "inside the pause")
	// The pause holds the refill too: the instant moves by its length.
	r.advance(time.Second)
	if at := <-granted; at.Sub(start) < time.Second {
		t.Fatalf("granted at +%v, before the pause's end", at.Sub(start))
	}
}

// TestPauseFeedTunedPauseBeforeTarget: under a lowered quota (Tune) a
// pause refills the limit at that quota rather than holding the refill,
// so a pause that ends before a reserved sleeper's instant leaves the
// instant where it was. A sleeper without a feed (its Limiter closed)
// reads Redis when its timer fires, and goes at its instant.
func TestPauseFeedTunedPauseBeforeTarget(t *testing.T) {
	r := newRig(t)
	limits := []redisbucket.Limit{{Name: "requests", Capacity: 2, Rate: throttle.Per(10, time.Second)}}
	a := r.limiter("feedtuned", limits, redisbucket.WithReservations())
	b := r.limiter("feedtuned", limits, redisbucket.WithReservations())
	b.Close()
	// Lowered to 5 a second: a cost of 2, above the lowered capacity,
	// goes from a full bucket and leaves it at -1.
	a.Tune(0, 300, time.Minute)
	if ok, err := a.TryAcquire(2); !ok || err != nil {
		t.Fatalf("take two: %v %v", ok, err)
	}
	start := r.fc.Now()
	granted := acquireAsleep(t, r, b)
	a.PauseUntil(start.Add(50 * time.Millisecond))
	// The reservation's instant, 2 tokens at 5 a second, as without the
	// pause.
	r.advance(400 * time.Millisecond)
	tm := time.NewTimer(10 * time.Second)
	defer tm.Stop()
	select {
	case at := <-granted:
		if d := at.Sub(start); d != 400*time.Millisecond {
			t.Fatalf("granted at +%v, want +400ms", d)
		}
	case <-tm.C:
		t.Fatal("the sleeper was not woken at its instant, after a pause that ended before it")
	}
}

// acquireAsleep starts b.Acquire of costs (1 if none) and returns once
// it sleeps on the rig's fake clock; the channel gets the clock's time at
// the grant.
func acquireAsleep(t *testing.T, r *rig, b *redisbucket.Limiter, costs ...int64) <-chan time.Time {
	t.Helper()
	if len(costs) == 0 {
		costs = []int64{1}
	}
	granted := make(chan time.Time, 1)
	go func() {
		if _, err := b.Acquire(context.Background(), costs...); err != nil {
			t.Error(err)
		}
		granted <- r.fc.Now()
	}()
	untilAsleep(t, r)
	return granted
}

// notGranted fails the test if the sleeper behind granted has gone
// already: it was to wait, what says why.
func notGranted(t *testing.T, granted <-chan time.Time, start time.Time, what string) {
	t.Helper()
	select {
	case at := <-granted:
		t.Fatalf("granted at +%v, %s", at.Sub(start), what)
	default:
	}
}

// untilAsleep waits, within 10 s, until one caller sleeps on the rig's
// fake clock.
func untilAsleep(t *testing.T, r *rig) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
}

// A pause moves a reserved instant by what it moved the fleet's queue:
// from the instant it was stored to its end, not from the reservation.
// Moved further, a sleeper reserved before the pause went later than
// Redis counted it, and Redis, its queue drained and its bucket refilled,
// granted a burst while such sleepers were still to go (71 calls in 250 ms
// at the vendor in the fleet harness at 32 processes).
func TestPauseMovesReservedSleepersByItsLength(t *testing.T) {
	r := newRig(t)
	limits := []redisbucket.Limit{{Name: "requests", Capacity: 2, Rate: throttle.Per(10, time.Second)}}
	opts := []redisbucket.Option{redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0)}
	a := r.limiter("feedmove", limits, opts...)
	b := r.limiter("feedmove", limits, opts...)
	if ok, err := a.TryAcquire(2); !ok || err != nil {
		t.Fatalf("empty the bucket: %v %v", ok, err)
	}
	start := r.fc.Now()
	granted := acquireAsleep(t, r, b) // reserved for +100ms
	r.advance(50 * time.Millisecond)
	a.PauseUntil(r.fc.Now().Add(time.Second)) // stored at +50ms, ends at +1050ms
	waitUntil(t, "the pause on the other process's feed", func() bool { return redisbucket.PauseHeard(b) != 0 })
	untilAsleep(t, r)
	// The queue's refill moved by the pause's 1 s: the instant is +1100ms.
	r.advance(1050*time.Millisecond - time.Microsecond)
	untilAsleep(t, r)
	notGranted(t, granted, start, "before its moved instant")
	r.advance(time.Microsecond)
	select {
	case at := <-granted:
		if d := at.Sub(start); d != 1100*time.Millisecond {
			t.Fatalf("granted at +%v, want +1.1s", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not granted at +1.1s: the pause moved the instant by more than the queue")
	}
}
