package trtcm

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/errs"
	"github.com/throttlekit/throttle/internal/exact"
)

// A Marker is a Gate of one limit that refuses where a bucket would make
// the caller wait: a Marker measures, it does not schedule. A call marked
// green is granted; one marked yellow is granted by Acquire only when its
// context allows best effort (AllowBestEffort) and never by
// TryAcquirePermit; any other fails at once, Acquire's with a *MarkError
// matching ErrRed or ErrYellow, and spends nothing.

// Acquire marks cost, the one cost of a Marker's one limit, and grants it
// as described above; it never waits.
func (m *Marker) Acquire(ctx context.Context, costs ...int64) (throttle.Permit, error) {
	cost, err := markCost(costs)
	if err != nil {
		return nil, err
	}
	allow := BestEffortAllowed(ctx)
	p, color := m.grant(cost, allow)
	if p == nil {
		return nil, &MarkError{Color: color, Cost: cost, Marker: m.name}
	}
	return p, nil
}

// TryAcquirePermit grants cost only if it is marked green.
func (m *Marker) TryAcquirePermit(costs ...int64) (throttle.Permit, bool, error) {
	cost, err := markCost(costs)
	if err != nil {
		return nil, false, err
	}
	if p, _ := m.grant(cost, false); p != nil {
		return p, true, nil
	}
	return nil, false, nil
}

// WaitTime reports how long until cost would be marked green: until both
// the committed and the peak bucket hold it. It fails with
// throttle.ErrCostExceedsCapacity for a cost above the committed burst.
func (m *Marker) WaitTime(costs ...int64) (time.Duration, error) {
	cost, err := markCost(costs)
	if err != nil {
		return 0, err
	}
	m.Mu.Lock()
	defer m.Mu.Unlock()
	now := m.Now()
	m.p.Advance(&m.pl, now)
	m.c.Advance(&m.cl, now)
	at := max(m.c.ReadyAt(&m.cl, cost), m.p.ReadyAt(&m.pl, cost))
	if at == exact.Never {
		return 0, throttle.ErrCostExceedsCapacity
	}
	return time.Duration(at - now), nil
}

// Limits describes the Marker's one limit by its committed burst and rate,
// what a caller is promised; the peak is best effort.
func (m *Marker) Limits() []throttle.Limit {
	return []throttle.Limit{{Name: m.name, Capacity: m.c.Cap, Rate: m.cir}}
}

type bestEffortKey struct{}

// AllowBestEffort returns a context under which a Marker's Acquire grants a
// call marked yellow, and so a Transport over a Marker sends such a
// request: the caller accepts that it goes out above the committed rate (a
// background job, a retry that can fail).
func AllowBestEffort(ctx context.Context) context.Context {
	return context.WithValue(ctx, bestEffortKey{}, true)
}

// BestEffortAllowed reports whether ctx came from AllowBestEffort.
func BestEffortAllowed(ctx context.Context) bool {
	v, _ := ctx.Value(bestEffortKey{}).(bool)
	return v
}

// grant marks cost and, for a color granted, returns its Permit; a yellow
// call that is not allowed spends nothing.
func (m *Marker) grant(cost int64, allowYellow bool) (*markPermit, Color) {
	m.Mu.Lock()
	defer m.Mu.Unlock()
	color := m.markAt(m.Now(), cost, Green, allowYellow)
	if color == Red || color == Yellow && !allowYellow {
		return nil, color
	}
	return &markPermit{m: m, cost: cost, green: color == Green}, color
}

// bucketCount is the error for got costs given for a Marker's one limit
// (want is 1), worded as a Bucket's.
func bucketCount(got, want int) error { return errs.CostCount(got, want, "bucket") }

func markCost(costs []int64) (int64, error) {
	if len(costs) != 1 {
		return 0, bucketCount(len(costs), 1)
	}
	if costs[0] <= 0 {
		return 0, throttle.ErrInvalidCost
	}
	return costs[0], nil
}

// markPermit is the Permit of a Marker: settling corrects the buckets the
// mark took from, the peak one always and the committed one for green.
type markPermit struct {
	m       *Marker
	cost    int64
	green   bool
	settled atomic.Bool
}

func (p *markPermit) Costs() []int64 { return []int64{p.cost} }

func (p *markPermit) Settle(actual ...int64) error {
	if err := errs.Settling(&p.settled, actual, 1, bucketCount); err != nil {
		return err
	}
	m := p.m
	m.Mu.Lock()
	defer m.Mu.Unlock()
	now := m.Now()
	m.p.Advance(&m.pl, now)
	m.c.Advance(&m.cl, now)
	correct := func(s *exact.Shape, l *exact.Level) {
		if d := actual[0] - p.cost; d < 0 {
			s.Give(l, -d)
		} else {
			l.Take(d)
		}
	}
	correct(&m.p, &m.pl)
	if p.green {
		correct(&m.c, &m.cl)
	}
	return nil
}

func (p *markPermit) Cancel() error { return p.Settle(0) }
