package redisbucket_test

import (
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// A fleet that starts one process after another and loses Redis soon
// after stays within the quota on its local shares: each process counts
// the fleet again soon after a count that changed, so the first ones up,
// which counted only those before them, do not keep a share of 1/1 or 1/2
// for a whole registration period. Before, the first of four kept the
// whole rate, and the four granted about twice the quota.
func TestFleetShareStartThenOutage(t *testing.T) {
	r, m := miniRig(t)
	const procs, capacity, rate = 4, 20, 20
	opts := append(r.opts(), redisbucket.WithFleetTTL(4*time.Second)) // registrations every 1 s, 125 ms while the count changes
	bs := make([]*redisbucket.Bucket, procs)
	for i := range bs {
		b, err := redisbucket.New(miniClient(t, m), "share", capacity, throttle.Per(rate, time.Second), opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if ok, err := b.TryAcquire(1); !ok || err != nil {
			t.Fatalf("process %d: %v %v", i, ok, err)
		}
		bs[i] = b
		r.advance(10 * time.Millisecond)
	}
	// Normal traffic for a moment after the last start.
	for range 3 {
		r.advance(150 * time.Millisecond)
		for _, b := range bs {
			b.TryAcquire(1)
		}
	}
	for i, b := range bs {
		if n := redisbucket.FleetCount(b); n != procs {
			t.Errorf("process %d counted a fleet of %d, want %d", i, n, procs)
		}
	}
	m.SetError("LOADING Redis is loading the dataset in memory")
	const w = 2 * time.Second
	granted := 0
	for at := time.Duration(0); at <= w; at += 50 * time.Millisecond {
		for _, b := range bs {
			for {
				ok, _ := b.TryAcquire(1)
				if !ok {
					break
				}
				granted++
			}
		}
		r.advance(50 * time.Millisecond)
	}
	bound := capacity + rate*int(w/time.Second)
	t.Logf("%d processes granted %d on their local shares in %v; bound %d", procs, granted, w, bound)
	if granted > bound {
		t.Fatalf("the fleet granted %d in %v without Redis, above rate x w + capacity = %d", granted, w, bound)
	}
}
