package httpthrottle

import (
	"reflect"
	"sync/atomic"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/ledger"
	"github.com/throttlekit/throttle/pool"
)

// gate is a Gate and what the Transport found it can do: every step of a
// request goes through it, the same for every kind of Gate, and a Gate
// that lacks a capability goes without that reaction (see Transport).
// It is found once per Gate (gateCache): a Gate's limits, their number and
// names, are taken to be fixed.
type gate struct {
	g      throttle.Gate
	none   bool             // g is nil, or a nil pointer in a Gate
	keyed  bool             // g can key a map (ledger.Ref): its type is comparable
	limits []throttle.Limit // its limits, in cost order; never written
	ones   []int64          // 1 on every limit: the default cost; shared, never written
	clock  clockwork.Clock

	tk    throttle.Taker // takes and settles without a Permit
	pause throttle.Pauser
	level throttle.Leveler
	tune  throttle.Tuner
	meter throttle.Meter
	obs   throttle.Observer // told of the account's refusals
	learn Learner           // told of every response
	// burst is g, if its bursts from full can be followed: a comparable
	// Taker, Meter and Leveler.
	burst ledger.Followed
	// members are the members of a Gate that is a pool.Pool, whose
	// bursts from full are read before the pool chooses one.
	members []pool.Member
}

// newGate finds what g can do; ones, if not nil, lends it its default
// cost.
func newGate(g throttle.Gate, ones *onesBuf) *gate {
	x := new(gate)
	x.fill(g, ones)
	return x
}

// fill makes x the gate of g.
func (x *gate) fill(g throttle.Gate, ones *onesBuf) {
	*x = gate{g: g}
	if noGateIn(g) {
		x.none = true
		return
	}
	x.keyed = reflect.TypeOf(g).Comparable()
	x.limits = g.Limits()
	x.ones = ones.get(len(x.limits))
	x.clock = gateClock(g)
	x.tk, _ = g.(throttle.Taker)
	x.pause, _ = g.(throttle.Pauser)
	x.level, _ = g.(throttle.Leveler)
	x.tune, _ = g.(throttle.Tuner)
	x.meter, _ = g.(throttle.Meter)
	x.obs, _ = g.(throttle.Observer)
	x.learn, _ = g.(Learner)
	if f, ok := g.(ledger.Followed); ok && x.tk != nil && x.keyed {
		x.burst = f
	}
	if p, ok := g.(*pool.Pool); ok {
		x.members = p.Members()
	}
}

// name returns the name of limit i.
func (x *gate) name(i int) string { return x.limits[i].Name }

// gateSlots is the number of Gates a gateCache keeps.
const (
	gateBits  = 6
	gateSlots = 1 << gateBits
)

// gateCache keeps the gates of the Gates a Transport's requests used: one
// per slot chosen by the Gate's address, and the last few Gates that are
// values (a Keyed's Gate of a key) in a ring of their own, looked through
// in turn (a hash of a value behind an interface would allocate). A
// request finds its Gate's with a load and a comparison or a few, and
// allocates nothing for it, as long as its Gate is among those in use
// lately (Shared's one, PerKey's keys in use).
type gateCache struct {
	slots [gateSlots]atomic.Pointer[gate]
	vals  [valueSlots]atomic.Pointer[gate]
	next  atomic.Uint32 // the ring's next slot to fill
	ones  onesBuf
}

// valueSlots is the number of Gates that are values a gateCache keeps.
const valueSlots = 16

// of returns the gate of g.
func (c *gateCache) of(g throttle.Gate) *gate {
	return c.into(g, nil)
}

// into returns the gate of g, kept in the cache. With spare not nil, the
// gate of a Gate that is a value is made in spare and not kept: a server's
// keys come and go too fast for a cache, and the gate of one request then
// costs no allocation.
func (c *gateCache) into(g throttle.Gate, spare *gate) *gate {
	v := reflect.ValueOf(g)
	if v.Kind() == reflect.Pointer {
		slot := &c.slots[(uint64(v.Pointer())*0x9e3779b97f4a7c15)>>(64-gateBits)]
		if x := slot.Load(); x != nil && x.g == g {
			// Only Gates of comparable types are kept: a Gate of another
			// type than x.g's compares unequal without panicking.
			return x
		}
		x := newGate(g, &c.ones)
		if x.keyed {
			slot.Store(x)
		}
		return x
	}
	if spare != nil {
		spare.fill(g, &c.ones)
		return spare
	}
	for i := range c.vals {
		if x := c.vals[i].Load(); x != nil && x.g == g {
			return x
		}
	}
	x := newGate(g, &c.ones)
	if x.keyed {
		c.vals[c.next.Add(1)%valueSlots].Store(x)
	}
	return x
}

// onesBuf is a slice of ones that the gates share for their default cost,
// grown to the most limits a Gate has had.
type onesBuf struct{ p atomic.Pointer[[]int64] }

// get returns n ones, not to be written.
func (o *onesBuf) get(n int) []int64 {
	if o == nil {
		return ones(n)
	}
	if p := o.p.Load(); p != nil && len(*p) >= n {
		return (*p)[:n:n]
	}
	s := ones(max(n, 4))
	o.p.Store(&s)
	return s[:n:n]
}

// ones returns a new slice of n ones.
func ones(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = 1
	}
	return s
}
