package throttle

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/throttlekit/throttle/internal/errs"
	"github.com/throttlekit/throttle/internal/exact"
)

// permit is the Permit of buckets: Limiter.Acquire's and
// Handler's.
type permit struct {
	bs      []*Bucket
	costs   []int64
	settled atomic.Bool
	small   [2]int64 // costs, for the usual requests-and-tokens pair, without another allocation
}

// newPermit records a copy of costs taken from bs.
func newPermit(bs []*Bucket, costs []int64) *permit {
	p := &permit{bs: bs}
	if len(costs) <= len(p.small) {
		p.costs = p.small[:len(costs)]
	} else {
		p.costs = make([]int64, len(costs))
	}
	copy(p.costs, costs)
	return p
}

// Costs returns the costs the permit took, one per bucket.
func (p *permit) Costs() []int64 { return slices.Clone(p.costs) }

// Settle corrects the costs to the actual use, one value per bucket. Where
// actual is below the cost the difference is refunded (never above
// capacity); where it is above, the extra is charged, and the level may go
// negative: that debt is repaid from refill before anyone else is served,
// and queued waiters are re-timed. Settling a permit twice, or after
// Cancel, fails with ErrSettled and changes nothing, as do a number of
// values other than one per bucket (ErrInvalidCost) and a negative value
// (ErrInvalidCost).
func (p *permit) Settle(actual ...int64) error {
	if err := errs.Settling(&p.settled, actual, len(p.bs), costCount); err != nil {
		return err
	}
	return settle(p.bs, p.costs, actual)
}

// settle corrects costs taken from bs to actual. A charge that would leave
// a bucket more than one capacity in debt is cut there (as redisbucket's
// is): a usage figure that is garbage (a server's, say) must not lock the
// bucket for years. The error says so for the first bucket cut.
func settle(bs []*Bucket, costs, actual []int64) error {
	var capped error
	g := bs[0].lock()
	now := g.Now()
	g.serve(now)
	for i, b := range bs {
		b.Advance(&b.lvl, now)
		d := actual[i] - costs[i]
		switch {
		case d < 0:
			b.Give(&b.lvl, -d)
		case b.Inf || exact.SubSat(b.lvl.Tokens, d) >= -b.Cap:
			b.lvl.Take(d)
		default: // to -Cap exactly, or left where it is if already below
			if b.lvl.Tokens > -b.Cap || (b.lvl.Tokens == -b.Cap && b.lvl.Frac > 0) {
				b.lvl.Tokens, b.lvl.Frac = -b.Cap, 0
			}
			if capped == nil {
				capped = limitErr(b, fmt.Errorf("%w: permit settled at %d against %d taken: the charge would leave more than one capacity (%d) of debt and stops there",
					ErrCostExceedsCapacity, actual[i], costs[i], b.Cap), actual[i])
			}
		}
	}
	g.changed(now)
	g.Mu.Unlock()
	observeSettled(bs, costs, actual)
	return capped
}

// Cancel returns every cost: the call the permit was for was never made.
// It fails with ErrSettled if the permit was already settled or cancelled.
func (p *permit) Cancel() error {
	return p.Settle(make([]int64, len(p.bs))...)
}
