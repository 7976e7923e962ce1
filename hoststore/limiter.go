package hoststore

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// Limiter is a token bucket kept in a Store, one quota for every process
// of the host that makes a Limiter of the same name: a throttle.Gate, a
// throttle.Meter and a throttle.Pauser. Calls are granted in the order
// they reach the file, each at an instant the bucket covers it: a caller
// that must wait reserves its instant in one decision and sleeps in its
// own process, so waiting costs the file nothing.
type Limiter struct {
	s        *Store
	name     string
	capacity int64
	tokens   int64 // added every period
	period   int64 // nanoseconds
	full     int64 // capacity in level units: a token is period units, a nanosecond adds tokens
	clock    clockwork.Clock
}

var (
	_ throttle.Gate   = (*Limiter)(nil)
	_ throttle.Meter  = (*Limiter)(nil)
	_ throttle.Pauser = (*Limiter)(nil)
)

// Option configures a Limiter.
type Option func(*Limiter)

// WithClock reads the time from clk, for tests on a fake clock: every
// process sharing the file must read one clock.
func WithClock(clk clockwork.Clock) Option {
	return func(l *Limiter) {
		if clk != nil {
			l.clock = clk
		}
	}
}

// NewLimiter returns the Limiter named name in s: capacity tokens at
// most, refilled at rate. Processes that share a name must give it the
// same capacity and rate.
func NewLimiter(s *Store, name string, capacity int64, rate throttle.Rate, opts ...Option) (*Limiter, error) {
	tokens, period := rate.Tokens(), int64(rate.Period())
	if capacity <= 0 || tokens <= 0 || period <= 0 || rate == throttle.Inf {
		return nil, fmt.Errorf("%w: hoststore limiter %q with capacity %d and rate %v: want both positive and finite", throttle.ErrInvalidOption, name, capacity, rate)
	}
	if hi, lo := bits.Mul64(uint64(capacity), uint64(period)); hi != 0 || lo >= 1<<61 {
		return nil, fmt.Errorf("%w: hoststore limiter %q: capacity %d over a period of %v is too large to count exactly", throttle.ErrInvalidOption, name, capacity, rate.Period())
	}
	l := &Limiter{s: s, name: name, capacity: capacity, tokens: tokens, period: period,
		full: capacity * period, clock: clockwork.NewRealClock()}
	for _, o := range opts {
		o(l)
	}
	return l, nil
}

// Clock returns the clock the Limiter reads.
func (l *Limiter) Clock() clockwork.Clock { return l.clock }

// Limits describes the Limiter's one limit.
func (l *Limiter) Limits() []throttle.Limit {
	return []throttle.Limit{{Name: l.name, Capacity: l.capacity, Rate: throttle.Per(l.tokens, time.Duration(l.period))}}
}

// A limiter's record: a is the level (in units of 1/period of a token,
// negative while grants wait for their instant), b the instant of the
// level (Unix nanoseconds), c the end of a pause (Unix nanoseconds).

// refill brings r's level to now; a new record starts full.
func (l *Limiter) refill(r *record, now int64) {
	if r.b == 0 {
		r.a, r.b = l.full, now
		return
	}
	if e := now - r.b; e > 0 {
		need := l.full - r.a
		if need <= 0 || e >= ceilDiv(need, l.tokens) {
			r.a = max(r.a, l.full)
		} else {
			r.a += e * l.tokens
		}
		r.b = now
	}
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// decision is what one visit to the file decided for a cost.
type decision struct {
	at     time.Time     // the instant the cost is granted; zero if not granted
	paused time.Time     // the end of a pause in force, that took nothing
	wait   time.Duration // for a cost not granted, the wait it needed
}

// decide takes cost at the first instant the bucket covers it, if that
// instant is not after latest (a zero latest allows any instant; now
// true allows only the instant of the decision).
func (l *Limiter) decide(cost int64, latest time.Time, now bool) (decision, error) {
	var d decision
	err := l.s.update(l.name, kindLimiter, func(r *record) (bool, error) {
		// The time is read under the lock, so that the processes'
		// decisions are in the order of their instants.
		at := l.clock.Now()
		if now {
			latest = at
		}
		l.refill(r, at.UnixNano())
		if r.c > at.UnixNano() {
			d.paused = time.Unix(0, r.c)
			return true, nil
		}
		after := r.a - cost*l.period
		wait := time.Duration(0)
		if after < 0 {
			wait = time.Duration(ceilDiv(-after, l.tokens))
		}
		if !latest.IsZero() && at.Add(wait).After(latest) {
			d.wait = wait
			return true, nil
		}
		r.a, d.at = after, at.Add(wait)
		return true, nil
	})
	return d, err
}

// give gives back (delta > 0) or charges (delta < 0) delta tokens: never
// above the capacity, never more than a capacity into debt.
func (l *Limiter) give(delta int64) error {
	return l.s.update(l.name, kindLimiter, func(r *record) (bool, error) {
		l.refill(r, l.clock.Now().UnixNano())
		r.a = min(l.full, max(-l.full, r.a+delta*l.period))
		return true, nil
	})
}

// cost checks that costs is one positive cost within the capacity.
func (l *Limiter) cost(costs []int64) (int64, error) {
	switch {
	case len(costs) != 1:
		return 0, fmt.Errorf("%w: hoststore limiter %q has one limit and takes one cost, got %d", throttle.ErrInvalidCost, l.name, len(costs))
	case costs[0] <= 0:
		return 0, fmt.Errorf("%w: hoststore limiter %q got cost %d, want one above 0", throttle.ErrInvalidCost, l.name, costs[0])
	case costs[0] > l.capacity:
		return 0, fmt.Errorf("%w: hoststore limiter %q holds %d, the call asks %d", throttle.ErrCostExceedsCapacity, l.name, l.capacity, costs[0])
	}
	return costs[0], nil
}
