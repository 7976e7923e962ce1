package redisbucket_test

import (
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
