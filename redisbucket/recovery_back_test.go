package redisbucket_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// While the whole fleet has no Redis, each process grants its share of
// what the key refills; their charges reach Redis as each comes back. The
// first process back takes the key as at most empty, which counts those
// grants, and the part of each charge for grants made before that return
// is forgiven: counted again, it put the fleet a capacity in debt for
// grants the vendor had already counted against the refill (fleet harness
// at 8 processes: 1.18-1.21x the floor through a kill or a freeze). What
// a process granted on its share after another came back is still
// charged, and so is everything a process granted when it alone lost
// Redis.
func TestRecoveryChargesOnlyWhatFollowedTheReturn(t *testing.T) {
	t.Run("fleet outage", func(t *testing.T) {
		r, m := miniRig(t)
		a, cutA := cutBucket(t, r, m)
		b, cutB := cutBucket(t, r, m)
		cutA.Store(true)
		cutB.Store(true)
		// B takes one every 200 ms throughout, on its share while away.
		var step, bGrants int
		tick := func() {
			r.advance(100 * time.Millisecond)
			if step++; step%2 == 0 {
				if ok, _ := b.TryAcquire(1); ok {
					bGrants++
				}
			}
		}
		for range 20 { // the outage
			tick()
			a.TryAcquire(1)
		}
		if bGrants != 10 {
			t.Fatalf("B granted %d of 10 on its share in the outage", bGrants)
		}
		cutA.Store(false)
		for redisbucket.BreakerOpen(a) {
			tick()
			a.TryAcquire(1) // its probe, when due
		}
		back, before := r.fc.Now(), bGrants
		if lv := bucketLevel(t, a); lv < -1 || lv > 0 {
			t.Fatalf("level %v at the first return after a fleet outage spent on local shares, want empty (0 to -1)", lv)
		}
		for range 5 {
			tick()
		}
		cutB.Store(false)
		for redisbucket.BreakerOpen(b) {
			tick()
		}
		after := bGrants - before
		if after < 2 {
			t.Fatalf("B granted %d on its share after A came back", after)
		}
		// B's first grant back on Redis is among those charged.
		levelSinceReturn(t, r, a, back, after)
	})
	// B grants nothing on its share until A is back, then on every
	// step: all of it is charged. (Spread evenly over B's time away, as
	// once tried, most of it was forgiven, and a fleet whose grants came
	// late in an outage overspent: TestRecoveryNoBurst under load.)
	t.Run("grants late in the outage", func(t *testing.T) {
		r, m := miniRig(t)
		a, cutA := cutBucket(t, r, m)
		b, cutB := cutBucket(t, r, m)
		cutA.Store(true)
		cutB.Store(true)
		a.TryAcquire(1) // each falls back
		b.TryAcquire(1)
		for range 20 { // the outage: A takes its share, B nothing
			r.advance(100 * time.Millisecond)
			a.TryAcquire(1)
		}
		cutA.Store(false)
		for redisbucket.BreakerOpen(a) {
			r.advance(100 * time.Millisecond)
			a.TryAcquire(1) // its probe, when due
		}
		back := r.fc.Now()
		after := 0
		for range 8 {
			r.advance(100 * time.Millisecond)
			if ok, _ := b.TryAcquire(1); ok {
				after++
			}
		}
		if after < 2 {
			t.Fatalf("B granted %d on its share after A came back", after)
		}
		cutB.Store(false)
		for redisbucket.BreakerOpen(b) {
			r.advance(100 * time.Millisecond)
			if ok, _ := b.TryAcquire(1); ok {
				after++
			}
		}
		levelSinceReturn(t, r, a, back, after)
	})
	t.Run("lone outage", func(t *testing.T) {
		r, m := miniRig(t)
		a, _ := cutBucket(t, r, m)
		b, cutB := cutBucket(t, r, m)
		cutB.Store(true)
		away := 0
		for range 10 {
			r.advance(100 * time.Millisecond)
			if ok, _ := a.TryAcquire(1); !ok { // A takes the refill, on Redis
				t.Fatal("A refused on Redis")
			}
			if ok, _ := b.TryAcquire(1); ok {
				away++
			}
		}
		cutB.Store(false)
		for redisbucket.BreakerOpen(b) {
			r.advance(100 * time.Millisecond)
			if ok, _ := a.TryAcquire(1); !ok {
				t.Fatal("A refused on Redis")
			}
			if ok, _ := b.TryAcquire(1); ok {
				away++
			}
		}
		// A took every token that refilled: the level is the 8 left at the
		// start less everything B granted, charged in full.
		if lv, want := bucketLevel(t, a), max(8-float64(away), -10); lv > want+0.5 {
			t.Fatalf("level %v once B, alone away, came back with %d grants, want %v: charged in full", lv, away, want)
		}
	})
}

// levelSinceReturn checks, once B is back, the level of the cutBuckets'
// key: what refilled since A came back at back, less B's grants since
// (after), all charged.
func levelSinceReturn(t *testing.T, r *rig, a *redisbucket.Bucket, back time.Time, after int) {
	t.Helper()
	refill := min(float64(r.fc.Since(back))/float64(100*time.Millisecond), 10)
	want := refill - float64(after)
	if lv := bucketLevel(t, a); lv < want-1.5 || lv > want+1.5 {
		t.Fatalf("level %v once B is back, want %v: %v refilled since A came back, less B's %d grants since",
			lv, want, refill, after)
	}
}

// cutBucket returns a Bucket of 10 at 10 a second on a client of its own
// whose calls fail, as a network cut does, while cut is set.
func cutBucket(t *testing.T, r *rig, m interface{ Addr() string }) (*redisbucket.Bucket, *atomic.Bool) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	h := &cutHook{}
	c.AddHook(h)
	b, err := redisbucket.New(c, "back", 10, throttle.Per(10, time.Second),
		append(r.opts(), redisbucket.WithCallTimeout(50*time.Millisecond), redisbucket.WithProbeBackoff(100*time.Millisecond, time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if ok, err := b.TryAcquire(1); !ok || err != nil {
		t.Fatalf("healthy: %v %v", ok, err)
	}
	return b, &h.cut
}

func bucketLevel(t *testing.T, b *redisbucket.Bucket) float64 {
	t.Helper()
	lv, err := b.TokensContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return lv
}

type cutHook struct{ cut atomic.Bool }

var errCut = errors.New("dial tcp: connection refused (cut by the test)")

func (h *cutHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *cutHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.cut.Load() {
			cmd.SetErr(errCut)
			return errCut
		}
		return next(ctx, cmd)
	}
}

func (h *cutHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
