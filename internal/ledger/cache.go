package ledger

import (
	"reflect"
	"sync/atomic"

	"github.com/throttlekit/throttle"
)

// Entry is what a Cache keeps for a Gate: Fill makes it, and Kept reports
// whether it may be kept (its Gate's type is comparable: a Gate of another
// type compares unequal to it without panicking).
type Entry[T any] interface {
	*T
	Fill(g throttle.Gate, ones *Ones)
	Kept() bool
}

// node is an entry kept, with its Gate: a hit compares the Gate here and
// calls nothing of the entry's.
type node[T any] struct {
	g throttle.Gate
	v *T
}

// The Gates a Cache keeps: by address, and the last few that are values.
const (
	cacheBits  = 6
	cacheSlots = 1 << cacheBits
	valueSlots = 16
	pointerMul = 0x9e3779b97f4a7c15
	cacheShift = 64 - cacheBits
	onesLeast  = 4
)

// Cache keeps the entries of the Gates a client's requests used: one per
// slot chosen by the Gate's address, and the last few Gates that are
// values (a Keyed's Gate of a key) in a ring of their own, looked through
// in turn (a hash of a value behind an interface would allocate). A
// request finds its Gate's with a load and a comparison or a few, and
// allocates nothing for it, as long as its Gate is among those in use
// lately.
type Cache[T any, P Entry[T]] struct {
	slots [cacheSlots]atomic.Pointer[node[T]]
	vals  [valueSlots]atomic.Pointer[node[T]]
	next  atomic.Uint32 // the ring's next slot to fill
	// Ones lends the entries their default cost.
	Ones Ones
}

// Of returns the entry of g.
func (c *Cache[T, P]) Of(g throttle.Gate) *T { return c.Into(g, nil) }

// Into returns the entry of g, kept in the cache. With spare not nil, the
// entry of a Gate that is a value is made in spare and not kept: a
// server's keys come and go too fast for a cache, and the entry of one
// request then costs no allocation.
func (c *Cache[T, P]) Into(g throttle.Gate, spare *T) *T {
	v := reflect.ValueOf(g)
	if v.Kind() == reflect.Pointer {
		slot := &c.slots[(uint64(v.Pointer())*pointerMul)>>cacheShift]
		if n := slot.Load(); n != nil && n.g == g {
			return n.v
		}
		x := c.made(g)
		if P(x).Kept() {
			slot.Store(&node[T]{g, x})
		}
		return x
	}
	if spare != nil {
		P(spare).Fill(g, &c.Ones)
		return spare
	}
	for i := range c.vals {
		if n := c.vals[i].Load(); n != nil && n.g == g {
			return n.v
		}
	}
	x := c.made(g)
	if P(x).Kept() {
		c.vals[c.next.Add(1)%valueSlots].Store(&node[T]{g, x})
	}
	return x
}

func (c *Cache[T, P]) made(g throttle.Gate) *T {
	x := new(T)
	P(x).Fill(g, &c.Ones)
	return x
}

// Ones is a slice of ones that entries share for their default cost,
// grown to the most limits a Gate has had.
type Ones struct{ p atomic.Pointer[[]int64] }

// Get returns n ones, not to be written; a nil Ones makes new ones.
func (o *Ones) Get(n int) []int64 {
	if o != nil {
		if p := o.p.Load(); p != nil && len(*p) >= n {
			return (*p)[:n:n]
		}
	}
	s := make([]int64, max(n, onesLeast))
	for i := range s {
		s[i] = 1
	}
	if o != nil {
		o.p.Store(&s)
	}
	return s[:n:n]
}
