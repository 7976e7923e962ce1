package httpthrottle

import (
	"net/http"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/headers"
)

// gate is a Gate and what the Transport found it can do: every step of a
// request goes through it, the same for every kind of Gate, and a Gate
// that lacks a capability goes without that reaction (see Transport).
// It is found once per Gate (gateCache): a Gate's limits, their number and
// names, are taken to be fixed.
type gate struct {
	g     throttle.Gate
	none  bool     // g is nil, or a nil pointer in a Gate
	keyed bool     // g can key a map (limitRef): its type is comparable
	names []string // its limits' names, in cost order
	ones  []int64  // 1 on every limit: the default cost; never written
	clock clockwork.Clock

	tk    throttle.Taker // takes and settles without a Permit
	pause throttle.Pauser
	level throttle.Leveler
	tune  throttle.Tuner
	meter throttle.Meter
	obs   throttle.Observer // told of the account's refusals
	learn learner           // Auto's: told of every response
}

// learner is a Gate that learns the server's quota from the responses to
// its requests: Auto's.
type learner interface {
	// beforeSend reports whether a pause began (the fleet's) that the
	// request, holding its permit, must wait out before it is sent.
	beforeSend() bool
	// response tells the Gate what the server said to a request that cost
	// costs.
	response(req *http.Request, costs []int64, status int, sig *headers.Signals, maxPause time.Duration)
	// serverRate is the server's rate of limit i, which the Gate's own
	// never exceeds; 0 tokens while it is not known.
	serverRate(i int) (tokens int64, period time.Duration)
}

// newGate finds what g can do.
func newGate(g throttle.Gate) *gate {
	x := &gate{g: g}
	if g == nil {
		x.none = true
		return x
	}
	if v := reflect.ValueOf(g); v.Kind() == reflect.Pointer && v.IsNil() {
		x.none = true
		return x
	}
	x.keyed = reflect.TypeOf(g).Comparable()
	limits := g.Limits()
	x.names = make([]string, len(limits))
	x.ones = make([]int64, len(limits))
	for i, l := range limits {
		x.names[i], x.ones[i] = l.Name, 1
	}
	x.clock = gateClock(g)
	x.tk, _ = g.(throttle.Taker)
	x.pause, _ = g.(throttle.Pauser)
	x.level, _ = g.(throttle.Leveler)
	x.tune, _ = g.(throttle.Tuner)
	x.meter, _ = g.(throttle.Meter)
	x.obs, _ = g.(throttle.Observer)
	x.learn, _ = g.(learner)
	return x
}

// name returns the name of limit i.
func (x *gate) name(i int) string { return x.names[i] }

// gateCache keeps the gate of the last Gate a Transport's requests used:
// a Transport over one Gate (Shared) finds it again with one load and one
// comparison, and allocates nothing for it.
type gateCache struct{ last atomic.Pointer[gate] }

// of returns the gate of g.
func (c *gateCache) of(g throttle.Gate) *gate {
	if x := c.last.Load(); x != nil && x.g == g {
		// Only Gates of comparable types are kept: a Gate of another
		// type than x.g's compares unequal without panicking.
		return x
	}
	x := newGate(g)
	if x.keyed {
		c.last.Store(x)
	}
	return x
}

// limitRef names limit i of a Gate: the in-flight book and the window
// resets keep their counts by it.
type limitRef struct {
	g throttle.Gate
	i int
}
