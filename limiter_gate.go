package throttle

import (
	"context"
	"slices"
)

// TryAcquirePermit is TryAcquire returning the Permit for the costs taken:
// what LimitHandler gives a handler to settle. p is nil when ok is false.
func (l *Limiter) TryAcquirePermit(costs ...int64) (p Permit, ok bool, err error) {
	ok, err = l.TryAcquire(costs...)
	if !ok || err != nil {
		return nil, ok, err
	}
	return newPermit(l.bs, costs), true, nil
}

// Limits describes the limiter's buckets in cost order: name, capacity and
// rate as they are now.
func (l *Limiter) Limits() []Limit {
	ls := make([]Limit, len(l.bs))
	for i, b := range l.bs {
		ls[i] = b.limit()
	}
	return ls
}

// Lower brings bucket i (in cost order) down to at most remaining tokens,
// as a server's count of what is left asks; it never raises a level, and
// an i out of range changes nothing.
func (l *Limiter) Lower(i int, remaining int64) {
	if i >= 0 && i < len(l.bs) {
		l.bs[i].lower(remaining)
	}
}

// Status appends the state of every bucket, in cost order, to dst: with
// room in dst, it allocates nothing.
func (l *Limiter) Status(dst []LimitStatus) []LimitStatus {
	return limitStatus(l, dst)
}

// Wait is Acquire without the Permit, for a call that will not be settled
// (Taker): a grant at once allocates nothing.
func (l *Limiter) Wait(ctx context.Context, costs ...int64) error {
	if len(l.bs) == 0 {
		return errNoLimits(len(costs))
	}
	g, w, now, done, err := tryOrWaiter(ctx, l.bs, costs, l.obs)
	if done {
		return err
	}
	// A copy, so that costs does not escape: only a call that queues
	// allocates.
	w.bs, w.costs = l.bs, slices.Clone(costs)
	queued, err := enqueue(ctx, w, g, now)
	if queued {
		err = w.await(ctx, g, now)
	}
	g.recycle(w)
	return err
}

// Refund gives back costs taken by Wait or TryAcquire for a call that was
// never made, one per bucket in cost order, as Permit.Cancel does: never
// above a bucket's capacity, and queued waiters are served. A number of
// costs other than one per bucket fails with ErrInvalidCost, a negative one
// with ErrInvalidCost; either changes nothing.
func (l *Limiter) Refund(costs ...int64) error {
	if len(costs) != len(l.bs) {
		return costCount(len(costs), len(l.bs))
	}
	for _, c := range costs {
		if c < 0 {
			return errNegativeCost
		}
	}
	if len(l.bs) == 0 {
		return nil
	}
	settle(l.bs, costs, make([]int64, len(costs)))
	return nil
}
