package httpthrottle

import (
	"reflect"

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
func newGate(g throttle.Gate, ones *ledger.Ones) *gate {
	x := new(gate)
	x.Fill(g, ones)
	return x
}

// Fill makes x the gate of g.
func (x *gate) Fill(g throttle.Gate, ones *ledger.Ones) {
	*x = gate{g: g}
	if noGateIn(g) {
		x.none = true
		return
	}
	x.keyed = reflect.TypeOf(g).Comparable()
	x.limits = g.Limits()
	x.ones = ones.Get(len(x.limits))
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

// Kept, with Fill, makes gate a ledger.Entry of the Transport's and the
// Handler's caches (gateCache).
func (x *gate) Kept() bool { return x.keyed }

// gateCache keeps the gates of the Gates a Transport's or a Handler's
// requests used: a request finds its Gate's with a load and a comparison
// or a few, allocating nothing, as long as its Gate is among those in use
// lately (Shared's one, PerKey's keys in use).
type gateCache = ledger.Cache[gate, *gate]
