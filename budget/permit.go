package budget

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/throttlekit/throttle"
)

// permit is the reservation of one call in one window.
type permit struct {
	b          *Budget
	key        string
	start, end time.Time
	cost       int64
	done       atomic.Bool
}

func (p *permit) Costs() []int64 { return []int64{p.cost} }

// Settle charges the actual cost in the window the call was reserved in:
// what was reserved beyond it goes back, an overrun is charged whatever
// the limit, as it was spent. The next reservation then finds the window
// spent.
func (p *permit) Settle(actual ...int64) error {
	if len(actual) != 1 || actual[0] < 0 {
		return fmt.Errorf("%w: budget %q settles one cost of 0 or more, got %v", throttle.ErrInvalidCost, p.b.c.name, actual)
	}
	return p.adjust(actual[0] - p.cost)
}

// Cancel gives the whole reservation back: the call was never made, or
// the vendor refused it.
func (p *permit) Cancel() error { return p.adjust(-p.cost) }

func (p *permit) adjust(delta int64) error {
	if !p.done.CompareAndSwap(false, true) {
		return throttle.ErrSettled
	}
	if delta == 0 {
		return nil
	}
	spent, err := p.b.c.store.Adjust(context.Background(), p.key, p.start, delta)
	if err != nil {
		return fmt.Errorf("budget %q: settling %+d: %w", p.b.c.name, delta, err)
	}
	p.b.crossed(spent-delta, spent, p.end)
	return nil
}
