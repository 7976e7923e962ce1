package hoststore

import (
	"context"
	"fmt"
	"time"

	"github.com/throttlekit/throttle"
)

// A Limiter is a Taker: its grants are the file's decisions, and a Permit
// holds nothing the file does not, so settling without one is exact. It
// is a Leveler too: a server's count of what is left lowers the level
// every process of the host reads. It is not a Tuner: the capacity and
// rate are each process's own (NewLimiter's), so a Tune in one process
// would leave the others at the old ones.
var (
	_ throttle.Taker   = (*Limiter)(nil)
	_ throttle.Leveler = (*Limiter)(nil)
)

// Take is Acquire without the Permit; it reports the time the call waited.
func (l *Limiter) Take(ctx context.Context, costs ...int64) (time.Duration, error) {
	start := l.clock.Now()
	if _, err := l.take(ctx, costs); err != nil {
		return 0, err
	}
	return max(0, l.clock.Since(start)), nil
}

// TryAcquire is TryAcquirePermit without the Permit.
func (l *Limiter) TryAcquire(costs ...int64) (bool, error) {
	cost, err := l.cost(costs)
	if err != nil {
		return false, err
	}
	d, err := l.decide(cost, time.Time{}, true)
	return err == nil && !d.at.IsZero(), err
}

// Settle corrects what Take or TryAcquire took to actual: taken beyond
// actual goes back, never above the capacity; actual beyond taken is
// charged, at most one capacity into debt.
func (l *Limiter) Settle(taken, actual []int64) error {
	if len(taken) != 1 || len(actual) != 1 || taken[0] < 0 || actual[0] < 0 {
		return fmt.Errorf("%w: hoststore limiter %q settles one cost of 0 or more, got %v taken and %v actual", throttle.ErrInvalidCost, l.name, taken, actual)
	}
	if taken[0] == actual[0] {
		return nil
	}
	return l.give(taken[0] - actual[0])
}

// Lower brings the level down to at most remaining tokens, for every
// process of the host; it never raises it. A negative remaining is a
// debt, at most one capacity deep.
func (l *Limiter) Lower(i int, remaining int64) {
	if i != 0 { // the Limiter has one limit
		return
	}
	_ = l.s.update(l.name, kindLimiter, func(r *record) (bool, error) {
		l.refill(r, l.clock.Now().UnixNano())
		r.a = min(r.a, max(-l.full, min(remaining, l.capacity)*l.period))
		return true, nil
	})
}
