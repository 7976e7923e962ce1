package ledger

import (
	"testing"
	"time"

	"github.com/throttlekit/throttle"
)

type entry struct {
	g    throttle.Gate
	ones []int64
}

func (e *entry) Fill(g throttle.Gate, ones *Ones) { *e = entry{g: g, ones: ones.Get(len(g.Limits()))} }
func (e *entry) Kept() bool                       { return true }

// TestCache: a Gate's entry is made once and found again, a pointer's by
// its slot and a value's in the ring; a spare takes a value's entry
// without keeping it.
func TestCache(t *testing.T) {
	var c Cache[entry, *entry]
	l, _ := throttle.NewLimiter(mustBucket(t), mustBucket(t))
	a := c.Of(l)
	if c.Of(l) != a || len(a.ones) != 2 || a.ones[0] != 1 || a.ones[1] != 1 {
		t.Fatalf("entry of a Limiter not kept, or wrong ones: %+v", a)
	}
	k := throttle.NewKeyed(func(string) []throttle.Limit {
		return []throttle.Limit{{Name: "r", Capacity: 1, Rate: throttle.Per(1, time.Second)}}
	})
	g := k.Gate("x")
	v := c.Of(g)
	if c.Of(g) != v {
		t.Fatal("entry of a value Gate not kept in the ring")
	}
	var spare entry
	if got := c.Into(g, &spare); got != &spare {
		t.Fatal("a value Gate with a spare did not use it")
	}
	if allocs := testing.AllocsPerRun(100, func() { c.Of(l) }); allocs != 0 {
		t.Errorf("finding a kept entry allocates %v times", allocs)
	}
}

func mustBucket(t *testing.T) *throttle.Bucket {
	b, err := throttle.New(10, throttle.Per(10, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
