package redisbucket_test

import (
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// A key Redis lost during an outage (a restart without persistence) is
// rebuilt empty by the first process back from failure mode, not from its
// last view refilled: while Redis was away the fleet's local shares
// granted what the key would have refilled to, and a full key would let
// the first process back spend it again while the others are still on
// their shares. Here B spends its share through a 2 s outage while A
// idles; A comes back first and finds the key gone: before, it found a
// full bucket (10 grants at once, for a fleet that had just spent its
// quota); now it gets at most what refills in the margin (the call
// timeout).
func TestRecoveryLostKeyRebuiltEmpty(t *testing.T) {
	r, m := miniRig(t)
	limit := throttle.Per(10, time.Second)
	opts := append(r.opts(), redisbucket.WithCallTimeout(50*time.Millisecond))
	a, err := redisbucket.New(miniClient(t, m), "lost", 10, limit, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := redisbucket.New(miniClient(t, m), "lost", 10, limit, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, l := range []*redisbucket.Bucket{a, b} {
		if ok, err := l.TryAcquire(1); !ok || err != nil {
			t.Fatalf("healthy: %v %v", ok, err)
		}
	}
	m.SetError("LOADING Redis is loading the dataset in memory")
	a.TryAcquire(1) // both breakers open
	b.TryAcquire(1)
	local := spendShare(r, b, 20)
	if local == 0 {
		t.Fatal("B granted nothing on its local share")
	}
	m.SetError("")
	m.FlushAll()                      // the restarted server lost the key
	r.advance(200 * time.Millisecond) // A's probe is due
	back := grantsAtOnce(a, 20)
	if redisbucket.BreakerOpen(a) {
		t.Fatalf("A not back on Redis: %s", redisbucket.BreakerState(a))
	}
	t.Logf("B granted %d on its share in the outage; A granted %d on its return", local, back)
	if back > 1 {
		t.Fatalf("A granted %d at once on a key rebuilt after the outage, want at most 1", back)
	}
}
