package llm

import (
	"sync/atomic"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// takenAttempt is an httpthrottle.Attempt that took costs on buckets and
// records how it ended, as the Transport's does without its Gate.
type takenAttempt struct {
	names   []string
	costs   []int64
	done    atomic.Bool
	settled []int64
}

// takenSettler is the attempt of a call that took cost from b.
func takenSettler(b *throttle.Bucket, cost int64) httpthrottle.Attempt {
	return &takenAttempt{names: []string{b.Status().Name}, costs: []int64{cost}}
}

func (a *takenAttempt) Settle(actual ...int64) error {
	if !a.done.CompareAndSwap(false, true) {
		return throttle.ErrSettled
	}
	a.settled = actual
	return nil
}

func (a *takenAttempt) Keep()                       { a.done.Store(true) }
func (a *takenAttempt) Costs() []int64              { return a.costs }
func (a *takenAttempt) LimitName(i int) string      { return a.names[i] }
func (a *takenAttempt) ReportedLimit(string) int64  { return 0 }
func (a *takenAttempt) RefusalHead() ([]byte, bool) { return nil, false }
