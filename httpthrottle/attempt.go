package httpthrottle

import (
	"sync/atomic"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/errs"
)

// settler is the permit of an attempt that the Transport settles from its
// response (WithLLM): what the attempt took, on which limits.
type settler interface {
	Settle(actual ...int64) error
	// Keep ends the permit at its costs, without a settlement.
	Keep()
	// TakenCosts returns the costs taken, not to be written.
	TakenCosts() []int64
	// LimitName returns the name of limit i, in cost order.
	LimitName(i int) string
	// LimitCapacity returns the capacity of limit i.
	LimitCapacity(i int) int64
}

// attempt is the settler of an attempt: it settles through the Permit the
// Gate's Acquire gave, or for a Taker, which gave none, through its
// Settle, and tells the Transport's book of what is in flight.
type attempt struct {
	t      *Transport
	g      *gate
	costs  []int64
	p      throttle.Permit // nil on a Taker
	done   atomic.Bool
	limits []throttle.Limit // read once, for LimitCapacity
}

func (a *attempt) Settle(actual ...int64) error {
	if !a.done.CompareAndSwap(false, true) {
		return throttle.ErrSettled
	}
	var err error
	if a.p != nil {
		err = a.p.Settle(actual...)
	} else if len(actual) != len(a.costs) {
		err = errs.CostCount(len(actual), len(a.costs), "bucket")
	} else {
		err = a.g.tk.Settle(a.costs, actual)
	}
	if len(actual) == len(a.costs) {
		a.book(actual)
	}
	return err
}

func (a *attempt) Keep() {
	if a.done.CompareAndSwap(false, true) {
		a.book(a.costs)
	}
}

// book moves the attempt to the settled ones of the Transport's book.
func (a *attempt) book(actual []int64) {
	if a.g.keyed {
		a.t.inFlight.settled(a.g.g, a.costs, actual)
	}
}

func (a *attempt) TakenCosts() []int64    { return a.costs }
func (a *attempt) LimitName(i int) string { return a.g.limits[i].Name }

func (a *attempt) LimitCapacity(i int) int64 {
	if a.limits == nil {
		a.limits = a.g.g.Limits()
	}
	if i < len(a.limits) {
		return a.limits[i].Capacity
	}
	return 0
}
