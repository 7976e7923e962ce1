package redisbucket

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
)

// Limit is one limit of a Limiter: a named bucket of Capacity tokens that
// refills at Rate. It is throttle.Limit, so that a Limiter's Limits are a
// throttle.Gate's.
type Limit = throttle.Limit

// Limiter is several shared limits spent all or nothing in one script call,
// like throttle.Limiter: a provider's requests per minute and tokens per
// minute, say. All its limits live in one Redis string key, <prefix>{<id>}
// (the levels packed together; see the package documentation), so one
// atomic script decides for all of them, on one cluster shard. Every limit
// has the semantics of Bucket.
//
// A Limiter is safe for concurrent use.
type Limiter struct {
	e  *engine
	tm tuneMemo
}

// NewLimiter returns a Limiter for the limiter id over limits, whose costs
// are given in this order. Names must be non-empty and distinct. Lease mode
// is not available for a Limiter. Like New, it checks that Redis answers
// and fails with an error wrapping ErrUnavailable when it does not, unless
// WithStartWithoutRedis.
func NewLimiter(client redis.UniversalClient, id string, limits []Limit, opts ...Option) (*Limiter, error) {
	if len(limits) == 0 {
		return nil, errors.New("redisbucket: NewLimiter needs at least one limit")
	}
	shapes := make([]shape, len(limits))
	for i, l := range limits {
		if l.Name == "" {
			return nil, fmt.Errorf("redisbucket: NewLimiter: limit %d has no name", i)
		}
		if slices.IndexFunc(limits, func(o Limit) bool { return o.Name == l.Name }) != i {
			return nil, fmt.Errorf("redisbucket: NewLimiter: limit name %q appears twice", l.Name)
		}
		s, err := newShape(l.Name, l.Capacity, l.Rate)
		if err != nil {
			return nil, err
		}
		shapes[i] = s
	}
	e, err := newEngine(client, id, shapes, opts)
	if err != nil {
		return nil, err
	}
	if e.o.lease != nil {
		return nil, invalidOption("WithLease given to NewLimiter: lease mode is for a Bucket, not a Limiter")
	}
	if err := e.start(); err != nil {
		return nil, err
	}
	if e.o.reserve {
		e.startFeed()
	}
	return &Limiter{e: e}, nil
}

// Close ends what a Limiter keeps running: its subscription to the
// fleet's pauses (a goroutine and a connection of its own), which
// reservations (the default) use. Close every Limiter you are done with;
// built WithoutReservations there is nothing to end. A closed Limiter
// still decides; its reserved sleepers then ask Redis at their instants
// whether a pause was stored, as before it subscribed.
func (l *Limiter) Close() error {
	l.e.closeFeed()
	return nil
}

// Key returns the Redis key that holds the limiter's state.
func (l *Limiter) Key() string { return l.e.key }

// Limits returns the limits in cost order.
func (l *Limiter) Limits() []Limit {
	out := make([]Limit, len(l.e.limits))
	for i, s := range l.e.limits {
		out[i] = Limit{Name: s.name, Capacity: s.capacity, Rate: s.rate}
	}
	return out
}

// Stats returns the limiter's counters.
func (l *Limiter) Stats() Stats { return l.e.stats() }

// TryAcquire takes costs[i] from limit i if every limit covers its cost now,
// and otherwise takes nothing; it never waits, and refuses while a local
// Acquire is queued. A zero cost leaves that limit out; at least one cost
// must be positive.
func (l *Limiter) TryAcquire(costs ...int64) (bool, error) {
	return l.TryAcquireContext(context.Background(), costs...)
}

// TryAcquireContext is TryAcquire with a context for the Redis call.
func (l *Limiter) TryAcquireContext(ctx context.Context, costs ...int64) (bool, error) {
	return l.e.tryAcquire(ctx, costs)
}

// Acquire waits until every limit covers its cost at the same moment,
// holding nothing while it waits (the wait is the latest of the per-limit
// waits, recomputed by the script after each sleep), then takes all the
// costs and returns a Permit to settle against the actual use. It fails
// like Bucket.Acquire; a *throttle.WaitError names the limit that binds.
// Its Paused is the end of the pause in force that this process heard of,
// with its Cause when known (Status); its Ahead counts only this process's
// calls queued ahead of the refused one (its local queue and its reserved
// sleepers): the fleet's queue is in Redis, and other processes' calls in
// it are not counted, though they are in Wait. A call that would queue
// behind this process's waiters with a deadline before the end of the
// pause in force is refused at once with that explanation.
//
// The Permit is a *Permit, whose ID, Mode, SettleContext and CancelContext
// a type assertion reaches.
func (l *Limiter) Acquire(ctx context.Context, costs ...int64) (throttle.Permit, error) {
	p, err := acquirePermit(ctx, l.e, costs)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// WaitTime reports how long until TryAcquire(costs...) would succeed: the
// latest of the per-limit waits, rounded up to the server's time unit.
func (l *Limiter) WaitTime(costs ...int64) (time.Duration, error) {
	return l.WaitTimeContext(context.Background(), costs...)
}

// WaitTimeContext is WaitTime with a context for the Redis call.
func (l *Limiter) WaitTimeContext(ctx context.Context, costs ...int64) (time.Duration, error) {
	if err := l.e.check(costs); err != nil {
		return 0, err
	}
	v, err := l.e.peek(ctx, costs)
	if err != nil {
		return 0, err
	}
	if v.never {
		return 0, fmt.Errorf("limit %q: %w", l.e.limits[v.limit].name, throttle.ErrCostExceedsCapacity)
	}
	return v.wait, nil
}

// Tokens returns every limit's level right now, in cost order; see
// Bucket.Tokens for failure mode.
func (l *Limiter) Tokens(ctx context.Context) ([]float64, error) {
	v, err := l.e.peek(ctx, make([]int64, len(l.e.limits)))
	if err != nil {
		return nil, err
	}
	return v.tokens, nil
}
