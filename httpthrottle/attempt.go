package httpthrottle

import (
	"io"
	"slices"
	"sync/atomic"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/errs"
	"github.com/throttlekit/throttle/internal/headers"
)

// attempt is the Attempt the Transport hands its Accounting: it settles
// through the Permit the Gate's Acquire gave, or for a Taker, which gave
// none, through its Settle, and tells the Transport's book of what is in
// flight.
type attempt struct {
	t      *Transport
	g      *gate
	costs  []int64
	p      throttle.Permit // nil on a Taker
	done   atomic.Bool
	limits []throttle.Limit // read once, for limitCapacity
	// What the response said, read during Accounting.Settle only: the
	// exchange's signals, and the body as the Transport left it.
	sig  *headers.Signals
	body io.ReadCloser
}

func (a *attempt) Settle(actual ...int64) error {
	if !a.done.CompareAndSwap(false, true) {
		return throttle.ErrSettled
	}
	actual = a.clamp(actual)
	var err error
	if a.p != nil {
		err = a.p.Settle(actual...)
	} else if len(actual) != len(a.costs) {
		err = errs.CostCount(len(actual), len(a.costs), "bucket")
	} else {
		err = a.g.tk.Settle(a.costs, actual)
	}
	a.book()
	return err
}

// clamp returns actual with every cost above its limit's capacity lowered
// to the capacity, counted in TransportStats.Clamped; actual itself, the
// caller's, is left as it is.
func (a *attempt) clamp(actual []int64) []int64 {
	var out []int64
	for i, n := range actual {
		if c := a.limitCapacity(i); n > c && c > 0 {
			if out == nil {
				out = slices.Clone(actual)
			}
			out[i] = c
		}
	}
	if out == nil {
		return actual
	}
	a.t.clamped.Add(1)
	return out
}

func (a *attempt) Keep() {
	if a.done.CompareAndSwap(false, true) {
		a.book()
	}
}

// book takes the attempt out of the Transport's book of those in flight.
func (a *attempt) book() {
	if a.g.keyed {
		a.t.inFlight.Settled(a.g.g, a.costs)
	}
}

func (a *attempt) Costs() []int64         { return a.costs }
func (a *attempt) LimitName(i int) string { return a.g.limits[i].Name }

func (a *attempt) ReportedLimit(quota string) int64 {
	var least int64
	if a.sig == nil {
		return 0
	}
	for _, q := range a.sig.Quotas {
		if q.Name == quota && q.Limit > 0 && (least == 0 || q.Limit < least) {
			least = q.Limit
		}
	}
	return least
}

func (a *attempt) RefusalHead() (head []byte, ok bool) {
	head, _, ok = headers.PeekedHead(a.body)
	return head, ok
}

func (a *attempt) limitCapacity(i int) int64 {
	if a.limits == nil {
		a.limits = a.g.g.Limits()
	}
	if i < len(a.limits) {
		return a.limits[i].Capacity
	}
	return 0
}
