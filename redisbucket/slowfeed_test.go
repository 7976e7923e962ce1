package redisbucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// A rate one process lowers (Tune) reaches another's reserved sleeper
// through the feed: the sleeper's wait, timed at the configured rate,
// stretches as the queue ahead drains at the lowered one, so the fleet
// does not wake it into the lowered quota early.
func TestSlowFeedStretchesReservedSleepers(t *testing.T) {
	r := newRig(t)
	limits := []redisbucket.Limit{{Name: "requests", Capacity: 2, Rate: throttle.Per(10, time.Second)}}
	a := r.limiter("slowfeed", limits, redisbucket.WithReservations())
	b := r.limiter("slowfeed", limits, redisbucket.WithReservations())
	ctx := context.Background()
	if ok, err := a.TryAcquire(2); !ok || err != nil {
		t.Fatalf("empty the bucket: %v %v", ok, err)
	}
	start := r.fc.Now()
	granted := make(chan time.Time, 1)
	go func() {
		p, err := b.Acquire(ctx, 1) // reserved for +100ms at 10/s
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
	a.Tune(0, 5, time.Second) // the server's quota: half the rate
	waitUntil(t, "the lowered rate on the other process's feed", func() bool { return redisbucket.SlowHeard(b) != 0 })
	r.advance(100 * time.Millisecond) // the instant at the configured rate
	if err := r.fc.BlockUntilContext(bctx, 1); err != nil {
		t.Fatal(err)
	}
	notGranted(t, granted, start, "at the instant the configured rate gave")
	r.advance(100 * time.Millisecond)
	if at := <-granted; at.Sub(start) < 200*time.Millisecond {
		t.Fatalf("granted at +%v, before the lowered rate covers it (+200ms)", at.Sub(start))
	}
}

// A slowdown heard twice (the publisher hears its own message, and
// processes tune to the same quota) stretches the sleepers once.
func TestSlowFeedOncePerShape(t *testing.T) {
	r := newRig(t)
	limits := []redisbucket.Limit{{Name: "requests", Capacity: 2, Rate: throttle.Per(10, time.Second)}}
	a := r.limiter("slowonce", limits, redisbucket.WithReservations())
	b := r.limiter("slowonce", limits, redisbucket.WithReservations())
	a.Tune(0, 5, time.Second)
	waitUntil(t, "the lowered rate on the other process's feed", func() bool { return redisbucket.SlowHeard(b) != 0 })
	b.Tune(0, 5, time.Second)
	// a's own message comes back on its feed: publish one more through b's
	// pause (a bare integer) and wait for it, so that a's feed has read
	// everything before it.
	b.PauseUntil(r.fc.Now().Add(time.Millisecond))
	waitUntil(t, "the pause on a's feed", func() bool { return redisbucket.PauseHeard(a) != 0 })
	if n, m := redisbucket.SlowHeard(a), redisbucket.SlowHeard(b); n != 1 || m != 1 {
		t.Fatalf("slowdowns applied: a %d, b %d; want 1 each", n, m)
	}
}
