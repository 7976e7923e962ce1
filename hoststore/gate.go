package hoststore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/throttlekit/throttle"
)

// Acquire waits its turn until the bucket covers cost, takes it, and
// returns the Permit for it. A wait past ctx's deadline fails at once
// with a *throttle.WaitError and takes nothing; a call cancelled while it
// waits gives its cost back.
func (l *Limiter) Acquire(ctx context.Context, costs ...int64) (throttle.Permit, error) {
	cost, err := l.take(ctx, costs)
	if err != nil {
		return nil, err
	}
	return &permit{l: l, cost: cost}, nil
}

// take is Acquire without the Permit: it returns the cost it took.
func (l *Limiter) take(ctx context.Context, costs []int64) (int64, error) {
	cost, err := l.cost(costs)
	if err != nil {
		return 0, err
	}
	latest, _ := ctx.Deadline()
	for {
		d, err := l.decide(cost, latest, false)
		switch {
		case err != nil:
			return 0, err
		case !d.paused.IsZero():
			if !latest.IsZero() && d.paused.After(latest) {
				return 0, &throttle.WaitError{Wait: d.paused.Sub(l.clock.Now()), Limit: l.name, Paused: d.paused}
			}
			if err := l.sleepUntil(ctx, d.paused); err != nil {
				return 0, err
			}
			continue
		case d.at.IsZero():
			return 0, &throttle.WaitError{Wait: d.wait, Limit: l.name}
		}
		if err := l.sleepUntil(ctx, d.at); err != nil {
			return 0, join(err, l.give(cost))
		}
		return cost, nil
	}
}

func join(err, other error) error {
	if other != nil {
		return other
	}
	return err
}

// sleepUntil waits for t on the Limiter's clock, or for ctx to end.
func (l *Limiter) sleepUntil(ctx context.Context, t time.Time) error {
	wait := t.Sub(l.clock.Now())
	if wait <= 0 {
		return nil
	}
	tm := l.clock.NewTimer(wait)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.Chan():
		return nil
	}
}

// TryAcquirePermit takes cost only if the bucket covers it now and no
// call waits ahead.
func (l *Limiter) TryAcquirePermit(costs ...int64) (throttle.Permit, bool, error) {
	cost, err := l.cost(costs)
	if err != nil {
		return nil, false, err
	}
	d, err := l.decide(cost, time.Time{}, true)
	if err != nil || d.at.IsZero() {
		return nil, false, err
	}
	return &permit{l: l, cost: cost}, true, nil
}

// WaitTime reports how long until cost would be covered, after the calls
// already waiting.
func (l *Limiter) WaitTime(costs ...int64) (time.Duration, error) {
	cost, err := l.cost(costs)
	if err != nil {
		return 0, err
	}
	var wait time.Duration
	now := l.clock.Now()
	err = l.s.update(l.name, kindLimiter, func(r *record) (bool, error) {
		l.refill(r, now.UnixNano())
		if after := r.a - cost*l.period; after < 0 {
			wait = time.Duration(ceilDiv(-after, l.tokens))
		}
		wait = max(wait, time.Duration(r.c-now.UnixNano()))
		return false, nil
	})
	return wait, err
}

// Status appends the bucket's state now. A file that cannot be read
// reports nothing left.
func (l *Limiter) Status(dst []throttle.LimitStatus) []throttle.LimitStatus {
	now := l.clock.Now()
	var r record
	err := l.s.update(l.name, kindLimiter, func(rec *record) (bool, error) {
		l.refill(rec, now.UnixNano())
		r = *rec
		return false, nil
	})
	st := throttle.LimitStatus{Name: l.name, Capacity: l.capacity, Rate: throttle.Per(l.tokens, time.Duration(l.period)), Reset: -1}
	if err == nil {
		st.Remaining = max(0, r.a/l.period)
		st.Level = float64(r.a) / float64(l.period)
		st.Reset = time.Duration(ceilDiv(l.full-r.a, l.tokens))
		if r.c > now.UnixNano() {
			st.Paused = time.Unix(0, r.c)
		}
	}
	return append(dst, st)
}

// PauseUntil holds every process's calls until t; a later pause extends
// an earlier one. levels, if given, lower the level to what a server says
// is left.
func (l *Limiter) PauseUntil(t time.Time, levels ...int64) {
	_ = l.s.update(l.name, kindLimiter, func(r *record) (bool, error) {
		l.refill(r, l.clock.Now().UnixNano())
		r.c = max(r.c, t.UnixNano())
		if len(levels) > 0 && levels[0] >= 0 {
			r.a = min(r.a, levels[0]*l.period)
		}
		return true, nil
	})
}

// permit is the record of a cost a Limiter took.
type permit struct {
	l    *Limiter
	cost int64
	done atomic.Bool
}

func (p *permit) Costs() []int64 { return []int64{p.cost} }

// Settle gives back what was taken beyond actual, or charges an overrun,
// at most one capacity into debt.
func (p *permit) Settle(actual ...int64) error {
	if len(actual) != 1 || actual[0] < 0 {
		return throttle.ErrInvalidCost
	}
	if !p.done.CompareAndSwap(false, true) {
		return throttle.ErrSettled
	}
	if actual[0] == p.cost {
		return nil
	}
	return p.l.give(p.cost - actual[0])
}

// Cancel gives the whole cost back.
func (p *permit) Cancel() error {
	if !p.done.CompareAndSwap(false, true) {
		return throttle.ErrSettled
	}
	return p.l.give(p.cost)
}
