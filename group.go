package throttle

import (
	"sync/atomic"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle/internal/exact"
)

// group is what buckets that are acquired together share: one mutex, one
// time line and one FIFO queue. A bucket starts in a group of its own;
// NewLimiter joins the groups of its buckets, so one lock covers a whole
// set of limits and limits shared between sets cannot deadlock.
type group struct {
	timeline
	members []*Bucket

	idle pool[waiter] // waiters done with, for reuse; see recycle

	// ahead: waiters behind the head arm their timers as they queue (see
	// waiter). Set on the real clock only, so that on a fake clock a
	// queue has one timer, which tests can count and wait for.
	ahead bool

	fifo[waiter, *waiter] // the FIFO queue: head, last

	// queued is whether head is set, kept for reading without the lock: a
	// caller that sees waiters queued will queue too, and prepares its
	// waiter before it locks (see prepare). Only a hint: a wrong guess
	// costs an allocation under the lock, or a waiter put back unused.
	queued atomic.Bool
	floor  int64 // instant of the latest grant to a queued waiter
	tailOK bool  // members' tail levels and tailAt may be current; see tailValid
	tailAt int64 // instant the last queued waiter will be served
}

func newGroup(c clockwork.Clock) *group {
	g := &group{ahead: c == nil}
	g.Start(c)
	return g
}

// join moves every bucket and waiter of o into g. Both are locked.
func (g *group) join(o *group) {
	delta := int64(o.Epoch.Sub(g.Epoch))
	for _, b := range o.members {
		// A pause far in the future (PauseUntil(year 9999) is at never)
		// and the level's last instant, moved to it, stay where they are:
		// an overflow would end the pause and refill the bucket.
		b.lvl.Last = shift(b.lvl.Last, delta)
		if b.paused != noPause {
			b.paused = shift(b.paused, delta)
		}
		b.g.Store(g)
	}
	g.members = append(g.members, o.members...)
	if f := shift(o.floor, delta); f > g.floor {
		g.floor = f
	}
	for w := o.Head; w != nil; {
		next := w.Next
		w.Since = shift(w.Since, delta)
		w.links = links[waiter]{}
		if w.rsv == nil {
			w.Timer.Stop()
		}
		w.Armed = exact.Never
		g.push(w)
		w = next
	}
	o.Head, o.Last, o.Len, o.members = nil, nil, 0, nil
	o.queued.Store(false)
	g.tailOK = false
	if g.Head != nil {
		g.arm(g.Now())
	}
}

// shift returns t+delta, an instant moved to another time line, saturating
// at never and at noPause (which also stay where they are).
func shift(t, delta int64) int64 {
	switch {
	case t == exact.Never || t == noPause:
		return t
	case delta > 0 && t > exact.Never-delta:
		return exact.Never
	case delta < 0 && t < noPause+1-delta:
		return noPause + 1
	}
	return t + delta
}
