package benchmarks

import (
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/htb"
)

// newClassAt returns a class at depth (1: a child of the quota, 2: a
// grandchild) of a hierarchy in state, each level with a sibling, so that
// a parent's spare sums over two children. The quota has the capacity and
// rate of newThrottle's bucket in that state; each child is guaranteed
// half its parent. With borrow, the class's own guarantee is a token a
// minute, so every call borrows from its parent.
func newClassAt(b *testing.B, state string, depth int, borrow bool) *htb.Class {
	b.Helper()
	capacity, perSec := int64(fullCapacity), int64(fullRate)
	if state == "refilling" {
		capacity, perSec = refillBurst, refillPerSec
	}
	c, err := htb.NewQuota(capacity, throttle.Per(perSec, time.Second))
	if err != nil {
		b.Fatal(err)
	}
	for i := range depth {
		cfg := htb.Config{Rate: throttle.Per(perSec>>(i+1), time.Second)}
		if borrow && i == depth-1 {
			cfg = htb.Config{Rate: throttle.Per(1, time.Minute), Burst: 1}
		}
		sib, err := c.NewClass(htb.Config{Rate: throttle.Per(perSec>>(i+2), time.Second)})
		if err != nil || sib == nil {
			b.Fatal(err)
		}
		if c, err = c.NewClass(cfg); err != nil {
			b.Fatal(err)
		}
	}
	if state == "refilling" {
		if ok, err := c.TryAcquire(1); !ok || err != nil {
			b.Fatalf("TryAcquire = %v, %v", ok, err)
		}
	}
	return c
}

// BenchmarkClassTryAcquirePaired compares Class.TryAcquire at depth 1 and
// 2 (the quota, a team, a class within the team) with one Bucket's, the
// two alternated with paired: "ratio" is the class over the bucket, the
// target at most 2 at depth 2 with 0 allocs. borrow=true is the path of a
// class past its guarantee, borrowing from its parent, which sums the
// parent's children: reported, no target.
func BenchmarkClassTryAcquirePaired(b *testing.B) {
	for _, state := range states {
		for _, depth := range []int{1, 2} {
			for _, borrow := range []bool{false, true} {
				name := "state=" + state + "/depth=" + string(rune('0'+depth))
				if borrow {
					name += "/borrow"
				}
				b.Run(name, func(b *testing.B) {
					bk := newThrottle(b, state)
					c := newClassAt(b, state, depth, borrow)
					b.ReportAllocs()
					paired(b, "class", func() {
						if ok, err := c.TryAcquire(1); !ok || err != nil {
							b.Fatalf("Class.TryAcquire = %v, %v", ok, err)
						}
					}, "bucket", func() {
						if ok, err := bk.TryAcquire(1); !ok || err != nil {
							b.Fatalf("TryAcquire = %v, %v", ok, err)
						}
					})
				})
			}
		}
	}
}
