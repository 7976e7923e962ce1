package redisbucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// A process that falls back starts its local share from the level its last
// reply gave, not refilled since: the fleet's other processes may have
// spent or reserved the refill meanwhile, and a share started fuller came
// on top of them (the fleet harness with reservations through a kill: 1-3
// vendor 429s a run at the first local grants).
func TestFailLocalStartsFromTheViewNotRefilled(t *testing.T) {
	r, m := miniRig(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	h := &cutHook{}
	c.AddHook(h)
	// The local share at the shared rate: its capacity is the shared one.
	b, err := redisbucket.New(c, "start", 10, throttle.Per(10, time.Second),
		append(r.opts(), redisbucket.WithFailurePolicy(redisbucket.FailLocal(throttle.Per(10, time.Second))))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	for range 10 {
		if ok, err := b.TryAcquire(1); !ok || err != nil {
			t.Fatalf("healthy: %v %v", ok, err)
		}
	}
	// Half a second later (5 refilled, which others may have taken) Redis
	// is gone.
	r.advance(500 * time.Millisecond)
	h.cut.Store(true)
	granted := 0
	for range 10 {
		if ok, _ := b.TryAcquire(1); ok {
			granted++
		}
	}
	if granted != 0 {
		t.Fatalf("%d granted at once on the local share, want 0: the view said empty", granted)
	}
	r.advance(100 * time.Millisecond)
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("nothing granted on the local share 100 ms later, at its rate")
	}
}

// A fleet's queue of reservations deeper than a local share's debt goes
// holds the share as long as the queue takes to drain: the rest of the
// debt is a pause of the local buckets. (32 processes with reservations
// through a kill or a freeze: 5-17 vendor 429s a run, while the queue's
// sleepers still went, without it.)
func TestFailLocalWaitsOutADeepQueue(t *testing.T) {
	r, m := miniRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Another process reserves 30 of 10 at 10/s: its sleepers go at +0,
	// +1 s and +2 s, and the level is 20 in debt.
	other, err := redisbucket.NewLimiter(miniClient(t, m), "deep", []redisbucket.Limit{{Name: "requests", Capacity: 10, Rate: throttle.Per(10, time.Second)}},
		r.opts(redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	var gone []<-chan time.Time
	for k := range 3 {
		granted := make(chan time.Time, 1)
		go func() {
			if _, err := other.Acquire(context.Background(), 10); err != nil {
				t.Error(err)
			}
			granted <- r.fc.Now()
		}()
		gone = append(gone, granted)
		if k > 0 {
			if err := r.fc.BlockUntilContext(ctx, k); err != nil {
				t.Fatal(err)
			}
		} else {
			<-granted
		}
	}
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	h := &cutHook{}
	c.AddHook(h)
	var lim *redisbucket.Limiter
	// This process's share: capacity 1 at 1/s, a tenth.
	lim, err = redisbucket.NewLimiter(c, "deep", []redisbucket.Limit{{Name: "requests", Capacity: 10, Rate: throttle.Per(10, time.Second)}},
		append(r.opts(), redisbucket.WithFailurePolicy(redisbucket.FailLocal(throttle.Per(1, time.Second))))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	if lv := levels(t, lim); lv[0] != -20 {
		t.Fatalf("level %v after the reservations, want -20", lv)
	}
	start := r.fc.Now()
	h.cut.Store(true)
	// The queue drains at +2 s; the share's first token comes a second
	// later, at its rate.
	for _, at := range []time.Duration{0, time.Second, 2 * time.Second, 2500 * time.Millisecond} {
		r.advance(at - r.fc.Since(start))
		if ok, _ := lim.TryAcquire(1); ok {
			t.Fatalf("granted on the local share at +%v, while the fleet's queue (drained at +2s) and the share's refill ran", at)
		}
	}
	r.advance(3*time.Second - r.fc.Since(start))
	if ok, _ := lim.TryAcquire(1); !ok {
		t.Fatal("nothing granted on the local share at +3s")
	}
	for _, g := range gone[1:] {
		<-g
	}
}
