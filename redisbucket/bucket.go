package redisbucket

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
)

// Bucket is a token bucket stored in Redis, shared by every process that
// uses the same client target, prefix and id. It has the semantics of
// throttle.Bucket: it starts full, refills continuously at its rate with
// exact integer arithmetic, never holds more than its capacity, and a
// refused request spends nothing. Time is the Redis server's clock, read in
// microseconds (or in the coarser unit newShape had to pick), so decisions
// are exact at that granularity and clock skew between clients cannot mint
// tokens.
//
// Every process must configure the same capacity and rate for the same id.
// A Bucket is safe for concurrent use.
type Bucket struct {
	e     *engine
	lease *leaser
}

// New returns a Bucket for the limiter id on client, holding at most
// capacity tokens and refilling at rate. Its state lives at the key
// <prefix>{<id>}, hashed on the id, so a cluster spreads limiters over its
// shards. It fails like throttle.New for a bad capacity or rate, with
// ErrRange when the limit cannot be computed exactly in Lua's doubles, and
// for an empty id or one containing "}".
//
// New then checks once that Redis answers for the key (a read-only run of
// the script, within the call timeout): when it does not, New fails with an
// error that wraps ErrUnavailable and the cause and names the address,
// unless WithStartWithoutRedis lets it start in failure mode. An error
// Redis answers with (an ACL refusal) fails New either way.
func New(client redis.UniversalClient, id string, capacity int64, rate throttle.Rate, opts ...Option) (*Bucket, error) {
	s, err := newShape("", capacity, rate)
	if err != nil {
		return nil, err
	}
	e, err := newEngine(client, id, []shape{s}, opts)
	if err != nil {
		return nil, err
	}
	b := &Bucket{e: e}
	if e.o.lease != nil {
		if b.lease, err = newLeaser(e, *e.o.lease); err != nil {
			return nil, err
		}
	}
	if err := e.start(); err != nil {
		return nil, err
	}
	if e.o.reserve && b.lease == nil {
		e.startFeed()
	}
	return b, nil
}

// Key returns the Redis key that holds the bucket's state.
func (b *Bucket) Key() string { return b.e.key }

// Capacity returns the most tokens the bucket holds.
func (b *Bucket) Capacity() int64 { return b.e.limits[0].capacity }

// Rate returns the rate the bucket refills at.
func (b *Bucket) Rate() throttle.Rate { return b.e.limits[0].rate }

// Granularity returns the time unit the server counts this bucket's time
// in: a microsecond unless the limit needed a coarser unit to stay exact.
func (b *Bucket) Granularity() time.Duration { return b.e.limits[0].granularity() }

// Stats returns the bucket's counters.
func (b *Bucket) Stats() Stats { return b.e.stats() }

// TryAcquire spends cost tokens if the shared bucket holds them now; it
// never waits. It refuses without calling Redis while a local Acquire is
// queued, so it does not jump that queue. It fails with
// throttle.ErrInvalidCost for cost <= 0 and throttle.ErrCostExceedsCapacity
// for cost > capacity. When Redis is unavailable the failure policy decides,
// and the decision is counted in Stats and reported to the observer.
func (b *Bucket) TryAcquire(cost int64) (bool, error) {
	return b.TryAcquireContext(context.Background(), cost)
}

// TryAcquireContext is TryAcquire with a context for the Redis call.
func (b *Bucket) TryAcquireContext(ctx context.Context, cost int64) (bool, error) {
	costs := [1]int64{cost}
	if b.lease != nil {
		if err := b.e.check(costs[:]); err != nil {
			return false, err
		}
		d, err := b.lease.decide(ctx, cost)
		if err != nil {
			return false, err
		}
		kind := throttle.EventRejected
		if d.granted {
			kind = throttle.EventGranted
		}
		b.e.count(d, costs[:], kind, d.wait, b.e.refusal(d, costs[:], 0, time.Time{}))
		return d.granted, nil
	}
	return b.e.tryAcquire(ctx, costs[:])
}

// Acquire waits until cost tokens are granted and takes them. The script
// returns how long the tokens take to accrue; Acquire sleeps that long on
// the injected clock, outside any lock, then tries again. Local callers are
// served in FIFO order, and only the first sleeps on a timer.
//
// It returns at once, spending nothing, with a *throttle.WaitError (which
// matches context.DeadlineExceeded) when ctx's deadline comes before the
// wait ends and that wait is certain (a wait that this process's unsettled
// permits could shorten waits its turn instead; see docs/redis.md); with throttle.ErrCostExceedsCapacity when the rate is zero and the bucket
// cannot cover cost; with an error wrapping ErrUnavailable under FailClosed
// while Redis is unavailable; with ctx's error when ctx ends while waiting.
func (b *Bucket) Acquire(ctx context.Context, cost int64) error {
	costs := []int64{cost}
	if b.lease != nil {
		_, err := b.e.acquire(ctx, costs, "", func(ctx context.Context) (decision, error) {
			return b.lease.decide(ctx, cost)
		})
		return err
	}
	_, err := b.e.acquireQueued(ctx, costs, "", func(ctx context.Context) (decision, error) {
		return b.e.decide(ctx, costs, "")
	})
	return err
}

// AcquirePermit is Acquire returning a Permit, to settle the cost against
// the actual use later. The permit's id makes the acquisition and its
// settlement idempotent on the server. In lease mode permits bypass the
// lease and go to Redis directly.
func (b *Bucket) AcquirePermit(ctx context.Context, cost int64) (*Permit, error) {
	return acquirePermit(ctx, b.e, []int64{cost})
}

// WaitTime reports how long until TryAcquire(cost) would succeed if nothing
// else changed: 0 if now. It is rounded up to the server's time unit, so
// that waiting exactly that long succeeds. It fails with throttle.ErrCostExceedsCapacity
// when the rate is zero and the level will never cover cost.
func (b *Bucket) WaitTime(cost int64) (time.Duration, error) {
	return b.WaitTimeContext(context.Background(), cost)
}

// WaitTimeContext is WaitTime with a context for the Redis call.
func (b *Bucket) WaitTimeContext(ctx context.Context, cost int64) (time.Duration, error) {
	costs := []int64{cost}
	if err := b.e.check(costs); err != nil {
		return 0, err
	}
	v, err := b.e.peek(ctx, costs)
	if err != nil {
		return 0, err
	}
	if v.never {
		return 0, throttle.ErrCostExceedsCapacity
	}
	return v.wait, nil
}

// Tokens returns the shared level right now, fractions included; it is
// negative while the bucket is in debt from a settled permit. When Redis
// cannot be reached it returns the failure policy's view: the capacity
// under FailOpen, 0 under FailClosed, the local bucket's level under
// FailLocal. Tokens leased by this or other processes are not in the level.
func (b *Bucket) Tokens() float64 {
	t, _ := b.TokensContext(context.Background())
	return t
}

// TokensContext is Tokens with a context for the Redis call, and the error
// of a call that failed for another reason than unavailability.
func (b *Bucket) TokensContext(ctx context.Context) (float64, error) {
	v, err := b.e.peek(ctx, []int64{0})
	if err != nil {
		return 0, err
	}
	return v.tokens[0], nil
}

// Close returns the tokens the bucket holds in lease mode to Redis and
// stops its lease timers; with reservations (the default, without lease)
// it ends the bucket's subscription to the fleet's pauses (see
// Limiter.Close). Built WithoutReservations, it does nothing. The bucket
// must not be used after Close.
func (b *Bucket) Close() error {
	b.e.closeFeed()
	if b.lease != nil {
		return b.lease.close()
	}
	return nil
}
