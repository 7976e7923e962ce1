package throttle

import (
	"context"
	"slices"
	"time"

	"github.com/jonboulle/clockwork"
)

// TryAcquirePermit is TryAcquire returning the Permit for the costs taken:
// what Handler gives a handler to settle. p is nil when ok is false.
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
// an i out of range changes nothing. A negative remaining is a debt the
// caller knows of (calls the server will count that the level no longer
// holds), at most one capacity deep, as redisbucket's Lower allows.
func (l *Limiter) Lower(i int, remaining int64) {
	if i >= 0 && i < len(l.bs) {
		b := l.bs[i]
		b.lowerTo(max(remaining, -b.capacity()))
	}
}

// Status appends the state of every bucket, in cost order, to dst: with
// room in dst, it allocates nothing.
func (l *Limiter) Status(dst []LimitStatus) []LimitStatus {
	return limitStatus(l, dst)
}

// Take is Acquire without the Permit, for a call that will not be settled
// (Taker); it reports how long the call waited in the queue. A grant at
// once allocates nothing and reads the clock once, for the decision.
func (l *Limiter) Take(ctx context.Context, costs ...int64) (time.Duration, error) {
	if len(l.bs) == 0 {
		return 0, errNoLimits(len(costs))
	}
	g, w, now, done, err := tryOrWaiter(ctx, l.bs, costs, l.obs)
	if done {
		return 0, err
	}
	// A copy, so that costs does not escape: only a call that queues
	// allocates.
	w.bs, w.costs = l.bs, slices.Clone(costs)
	queued, err := enqueue(ctx, w, g, now)
	if queued {
		err = w.await(ctx, g, now)
	}
	var waited time.Duration
	if w.queued {
		waited = time.Duration(l.bs[0].g.Load().Now() - w.Since)
	}
	g.recycle(w)
	return waited, err
}

// Clock returns the clock the limiter's buckets sleep on and read time
// from: the one WithClock gave, or the real clock.
func (l *Limiter) Clock() clockwork.Clock {
	if len(l.bs) == 0 {
		return clockwork.NewRealClock()
	}
	return l.bs[0].g.Load().Timers
}

// Settle corrects costs that Take or TryAcquire took to the actual use,
// one value per bucket in cost order, as a Permit's Settle does for the
// costs it holds: what was taken beyond actual goes back (never above a
// bucket's capacity; all of it, with actual all zero, for a call never
// made), and what actual exceeds was taken by is charged at once, whatever
// the level (a call already made, or one a caller sends regardless). A
// charge that would leave a bucket more than its capacity in debt is cut
// there and reported with an error matching ErrCostExceedsCapacity, the
// rest settled all the same. Queued waiters are served. A number of values
// other than one per bucket, or a negative one, fails with ErrInvalidCost
// and changes nothing.
func (l *Limiter) Settle(taken, actual []int64) error {
	n := len(l.bs)
	if len(taken) != n {
		return costCount(len(taken), n)
	}
	if len(actual) != n {
		return costCount(len(actual), n)
	}
	for i := range n {
		if taken[i] < 0 || actual[i] < 0 {
			return errNegativeCost
		}
	}
	if n == 0 {
		return nil
	}
	return settle(l.bs, taken, actual)
}

// Observe reports e, an event that happened outside the limiter (a server
// that refused the account behind the call, say), to the observers of the
// bucket e.Limit names, so that they hear of it beside the limiter's own
// decisions: with Observe, a Limiter is an Observer, and the HTTP
// Transport tells any Gate that is one. An event naming no bucket of the
// limiter is dropped.
//
// An EventPaused with a Reason tells the bucket what asked for its pause
// ending at e.Until (a server's response, say): told before PauseUntil,
// the Reason is kept for that pause, whose own EventPaused then carries
// it; told while that pause is in force, it is recorded and passed on.
// The Reason is what Status, Explain and WaitError report as the pause's
// Cause.
func (l *Limiter) Observe(e Event) {
	for _, b := range l.bs {
		if b.name != e.Limit {
			continue
		}
		if e.Kind == EventPaused && e.Reason != "" && !b.tell(e.Until, e.Reason) {
			continue // its pause will report it
		}
		if b.obs != nil {
			b.obs.Observe(e)
		}
	}
}
