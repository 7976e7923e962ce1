package redisbucket

import (
	"context"
	"time"
)

// view is what peek reports: the wait for some costs and every level.
type view struct {
	wait   time.Duration
	never  bool
	limit  int
	tokens []float64
	// fallback: the failure policy answered, and limit is not the one
	// that binds
	fallback bool
}

// peek reads the levels and the wait for costs without writing. In failure
// mode it answers from the failure policy's view: FailOpen full, FailClosed
// empty, FailLocal the local buckets.
func (e *engine) peek(ctx context.Context, costs []int64) (view, error) {
	now := e.o.clock.Now()
	v := view{tokens: make([]float64, len(e.limits))}
	res, fail, _, err := e.attempt(ctx, now, modePeek, "", costs, nil, 1, e.o.permitTTL)
	if err != nil {
		return v, err
	}
	if !fail {
		d := e.fromResult(res, costs)
		v.wait, v.never, v.limit = d.wait, d.never, d.limit
		for i, l := range e.limits {
			v.tokens[i] = l.value(res.levels[2*i], res.levels[2*i+1])
		}
		return v, nil
	}
	v.fallback = true
	e.fallbackView(&v, costs, now)
	return v, nil
}
