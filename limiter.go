package throttle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/throttlekit/throttle/internal/queue"
)

// Limiter spends on several buckets at once, all or nothing: a provider's
// requests per minute and tokens per minute, say. One call takes a cost
// from every bucket at the same instant, or from none.
//
// NewLimiter joins its buckets' queues and locks into one, so a bucket may
// belong to several Limiters (a daily token limit shared by two models,
// say) without deadlock, and every acquisition that touches it is served
// in one FIFO order. A bucket keeps working on its own as well.
type Limiter struct {
	bs  []*Bucket
	obs bool // some bucket has an observer; fixed, as observers are
}

// NewLimiter returns a Limiter over buckets, whose costs are given in this
// order. The buckets must use the same clock and appear once each.
//
// Joining is for good, and it couples the buckets' queues: every bucket
// joined, directly or through a bucket shared with another Limiter, is
// served from one FIFO queue, so a request waits behind every waiter
// queued before it on any bucket of that set, including waiters that need
// none of its own buckets. Say a daily token limit is shared by the
// Limiters of two models, each also with its own requests-per-minute
// bucket: while a call on model A waits hours for the daily limit, a bare
// TryAcquire on model B's requests bucket is refused and an Acquire on it
// queues behind that call, though B's bucket is full. That is the price of
// strict FIFO over shared limits with no deadlock and exact instants; keep
// buckets that must not wait for each other out of a common Limiter (give
// each model its own daily bucket, or keep the waits short with
// deadlines).
func NewLimiter(buckets ...*Bucket) (*Limiter, error) {
	err := queue.CheckJoin("NewLimiter", "bucket", buckets, func(i int, o, b *Bucket) error {
		if o == b {
			return fmt.Errorf("throttle: NewLimiter: bucket %d (%q) appears twice", i, b.name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := join(buckets); err != nil {
		return nil, err
	}
	l := limiterOver(slices.Clone(buckets))
	return &l, nil
}

// limiterOver returns a Limiter over bs, which already share one group.
func limiterOver(bs []*Bucket) Limiter {
	return Limiter{bs: bs, obs: observed(bs)}
}

// join puts buckets in one group.
func join(buckets []*Bucket) error {
	return queue.Join(buckets, (*Bucket).grp, errors.New("throttle: NewLimiter: buckets use different clocks"),
		func(gs []*group) error {
			for _, o := range gs[1:] {
				gs[0].join(o)
			}
			return nil
		})
}

// Bucket returns the bucket with the given name, or nil.
func (l *Limiter) Bucket(name string) *Bucket {
	for _, b := range l.bs {
		if b.name == name {
			return b
		}
	}
	return nil
}

// TryAcquire takes costs[i] from bucket i if every bucket covers its cost
// now and nobody is queued; otherwise it takes nothing. It never blocks.
// A zero cost leaves that bucket out; at least one cost must be positive.
// Its costs, like those of WaitTime and Acquire, are one per bucket: any
// other number fails with an error matching ErrInvalidCost.
func (l *Limiter) TryAcquire(costs ...int64) (bool, error) {
	if len(l.bs) == 0 {
		return false, errNoLimits(len(costs))
	}
	g := l.bs[0].lock()
	if err := check(l.bs, costs); err != nil {
		g.Mu.Unlock()
		if errors.Is(err, errClosed) {
			if l.obs {
				observe(l.bs, costs, EventRejected, 0)
			}
			return false, nil
		}
		return false, err
	}
	now := g.Now()
	if g.Head != nil {
		g.serve(now)
	}
	ok := g.takeNow(l.bs, costs, now)
	var why *WaitError
	if !ok && l.obs {
		why = g.rejectedWhy(l.bs, costs, now)
	}
	g.Mu.Unlock()
	if l.obs {
		kind, wait := EventRejected, time.Duration(0)
		if ok {
			kind = EventGranted
		} else if why != nil {
			wait = why.Wait
		}
		observeWhy(l.bs, costs, kind, wait, why)
	}
	return ok, nil
}

// WaitTime reports how long until TryAcquire(costs...) would succeed, given
// the waiters already queued: the latest of the per-bucket waits.
func (l *Limiter) WaitTime(costs ...int64) (time.Duration, error) {
	if len(l.bs) == 0 {
		return 0, errNoLimits(len(costs))
	}
	return waitTime(l.bs, costs)
}

// Acquire waits until every bucket covers its cost at the same instant,
// holding nothing while it waits, then takes all the costs and returns a
// Permit that can settle them against the actual use. It has the
// guarantees of Bucket.Acquire: FIFO, fail fast on a deadline that is too
// short, and a cancelled waiter spends nothing.
func (l *Limiter) Acquire(ctx context.Context, costs ...int64) (Permit, error) {
	if len(l.bs) == 0 {
		return nil, errNoLimits(len(costs))
	}
	g, w, now, done, err := tryOrWaiter(ctx, l.bs, costs, l.obs)
	if done {
		if err != nil {
			return nil, err
		}
		return newPermit(l.bs, costs), nil
	}
	// A copy, so that costs does not escape: a grant at once then
	// allocates only its Permit. The Permit keeps the copy.
	owned := slices.Clone(costs)
	w.bs, w.costs = l.bs, owned
	queued, err := enqueue(ctx, w, g, now)
	if queued {
		err = w.await(ctx, g, now)
	}
	g.recycle(w)
	if err != nil {
		return nil, err
	}
	return &permit{bs: l.bs, costs: owned}, nil
}

// PauseUntil grants nothing from the limiter's buckets before t, to
// Acquire or TryAcquire, as a server's 429 with Retry-After asks. The
// buckets do not refill while paused, so when the pause ends waiters are
// released at the configured rates from the levels the buckets had, not in
// a burst banked during the pause. A later pause extends the current one;
// an earlier one never shortens it.
//
// levels, if given, one per bucket in cost order, set each bucket whose
// value is not negative to that level, at most its capacity, debt
// forgiven: what a server that refused a call says is left for when the
// pause ends (the refused call's cost, say, so that it goes first and the
// rest follow at the rate, not in a burst and not after a refill of debt).
func (l *Limiter) PauseUntil(t time.Time, levels ...int64) {
	for i, b := range l.bs {
		b.pauseUntil(t)
		if i < len(levels) && levels[i] >= 0 {
			b.levelTo(levels[i])
		}
	}
}
