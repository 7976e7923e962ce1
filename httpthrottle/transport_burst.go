package httpthrottle

import "github.com/throttlekit/throttle/internal/ledger"

// Bursts from a full bucket (see package internal/ledger) are followed on
// a Gate that is a Taker, a Leveler and a Meter. Its levels (a round trip
// to Redis for redisbucket's Limiter) are read only by a call that could
// open a burst: none is open, and no call of the Gate is in flight. A
// Meter that also has a StatusBound method (ledger.Bounder; redisbucket's
// Limiter has one) is asked that first, for free: a limit its bound shows
// below capacity is not full, and Status is read only when one could be.

// follows reports whether the Transport follows the bursts from full of
// g: it has an Accounting, and g is a Taker, a Leveler and a Meter.
func (t *Transport) follows(g *gate) bool {
	return t.acct != nil && g.burst != nil
}

// fullBefore returns the mask of g's limits at their capacity that costs
// take from, read before the call takes them, when the call could open a
// burst: none is open, and no call of g is in flight.
func (t *Transport) fullBefore(g *gate, costs []int64) uint64 {
	if n := len(g.limits); !t.bursts.Idle(g.g, n) || !t.inFlight.Idle(g.g, n) {
		return 0
	}
	return ledger.Full(g.meter, costs)
}

// memberFull is fullBefore of each member of a pool, by name, read before
// the call takes its permit from the pool: the member that serves it is
// known only after, and another call taken meanwhile from the same member
// would hide that it was full.
type memberFull struct {
	names []string
	masks []uint64
}

// membersFull returns memberFull of g's members if g is a pool.
func (t *Transport) membersFull(g *gate, costs []int64) (f memberFull) {
	for _, m := range g.members {
		if mg := t.gates.Of(m.Gate); t.follows(mg) {
			if mask := t.fullBefore(mg, costs); mask != 0 {
				f.names, f.masks = append(f.names, m.Name), append(f.masks, mask)
			}
		}
	}
	return f
}

// of returns the mask of the member named name.
func (f memberFull) of(name string) uint64 {
	for i, n := range f.names {
		if n == name {
			return f.masks[i]
		}
	}
	return 0
}
