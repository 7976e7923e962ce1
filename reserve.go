package throttle

import (
	"math"
	"slices"
	"time"

	"github.com/throttlekit/throttle/internal/exact"
)

// A Reservation is a place in a bucket's FIFO queue, taken by Reserve
// without blocking, for callers that schedule work themselves: wait
// Delay(), then act; or call Cancel if the work will not be done. It is
// x/time/rate's Reservation with this package's guarantees: a reservation
// queues like an Acquire call (FIFO with every waiter and reservation, and
// TryAcquire does not jump it), is granted at the exact instant its tokens
// exist, and Cancel gives back everything.
//
// A Reservation is safe for concurrent use.
type Reservation struct {
	w *waiter // its buckets, costs and state
	// Guarded by the group's lock.
	at        time.Time // once granted, the instant it was, on the group's clock
	cancelled bool
}

// Reserve reserves costs, one per bucket, all or nothing: at once if
// nobody is queued and every level covers its cost, otherwise at the end
// of the queue, to be granted at the instant the tokens exist behind
// everyone queued before, from every bucket at that one instant. It never
// blocks. It fails, reserving nothing, as Acquire does: with an error
// matching ErrInvalidCost or ErrCostExceedsCapacity.
func (l *Limiter) Reserve(costs ...int64) (*Reservation, error) {
	if len(l.bs) == 0 {
		return nil, errNoLimits(len(costs))
	}
	return reserve(l.bs, slices.Clone(costs))
}

func reserve(bs []*Bucket, costs []int64) (*Reservation, error) {
	g := bs[0].lock()
	defer g.Mu.Unlock()
	if err := check(bs, costs); err != nil {
		return nil, err
	}
	now := g.Now()
	g.serve(now)
	r := &Reservation{}
	w := &waiter{bs: bs, costs: costs, rsv: r}
	w.Since, w.Armed = now, exact.Never
	r.w = w
	if g.takeNow(bs, costs, now) {
		w.Granted, r.at = true, g.Epoch.Add(time.Duration(now))
		return r, nil
	}
	t := g.project(bs, costs, now)
	if t == exact.Never {
		if err := noRefill(bs, costs); err != nil {
			return nil, err
		}
	}
	spend(bs, costs, t, true)
	g.tailAt, g.tailOK = t, true
	w.queued = true
	g.push(w)
	return r, nil
}

// Delay returns how long from now (on the buckets' clock) until the
// reserved tokens are granted, 0 once they are. A reservation still queued
// is re-timed like a waiter by whatever re-times the queue (SetRate,
// PauseUntil, Lower, Settle, a cancelled reservation or waiter ahead of
// it), so ask again after such a change. A reservation that no longer
// holds (cancelled, or made impossible by SetCapacity below its cost)
// returns the largest Duration, as x/time/rate's does when not OK.
func (r *Reservation) Delay() time.Duration {
	w := r.w
	g := w.bs[0].lock()
	defer g.Mu.Unlock()
	if r.cancelled || w.Err != nil {
		return math.MaxInt64
	}
	now := g.Now()
	g.serve(now)
	var at int64
	if w.Granted {
		at = g.Instant(r.at)
	} else if at = g.instantOf(w); at == exact.Never {
		return math.MaxInt64
	}
	return time.Duration(max(at-now, 0))
}

// Cancel gives the reservation back, in full: one still queued leaves the
// queue, and those behind it are re-timed as if it had never been made;
// one already granted returns its tokens to the levels (never above
// capacity), as Permit.Cancel does. Call it only for work that will not be
// done. Cancelling twice, or a reservation that no longer holds, does
// nothing.
func (r *Reservation) Cancel() {
	w := r.w
	g := w.bs[0].lock()
	defer g.Mu.Unlock()
	if r.cancelled || w.Err != nil {
		return
	}
	r.cancelled = true
	now := g.Now()
	g.serve(now)
	if w.Granted {
		for i, b := range w.bs {
			b.Advance(&b.lvl, now)
			b.Give(&b.lvl, w.costs[i])
		}
		g.changed(now)
		return
	}
	g.remove(w)
	g.changed(now)
	if g.Head != nil {
		g.arm(now) // the waiter armed may now be due earlier
	}
}
