package throttle

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
)

// group is what buckets that are acquired together share: one mutex, one
// time line and one FIFO queue. A bucket starts in a group of its own;
// NewLimiter joins the groups of its buckets, so one lock covers a whole
// set of limits and limits shared between sets cannot deadlock.
type group struct {
	mu      sync.Mutex
	clock   clockwork.Clock // nil: the real clock, read with time.Since
	timers  clockwork.Clock // never nil: where waiters sleep
	epoch   time.Time       // instant 0 of the time line
	members []*Bucket

	idle sync.Pool // waiters done with, for reuse; see recycle

	// ahead: waiters behind the head arm their timers as they queue (see
	// waiter). Set on the real clock only, so that on a fake clock a
	// queue has one timer, which tests can count and wait for.
	ahead bool

	head, last *waiter // the FIFO queue

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
	g := &group{clock: c, timers: c, ahead: c == nil}
	if c == nil {
		g.timers = clockwork.NewRealClock()
		g.epoch = time.Now()
	} else {
		g.epoch = c.Now()
	}
	return g
}

// now returns the current instant: nanoseconds since the epoch. With no
// injected clock it reads the monotonic clock directly, which costs about
// half of what clockwork's real clock (time.Now().Sub) does.
func (g *group) now() int64 {
	if g.clock == nil {
		return int64(time.Since(g.epoch))
	}
	return int64(g.clock.Since(g.epoch))
}

// wall returns the current time on the group's clock.
func (g *group) wall() time.Time {
	if g.clock == nil {
		return time.Now()
	}
	return g.clock.Now()
}

// instant converts t to the group's time line.
func (g *group) instant(t time.Time) int64 {
	return int64(t.Sub(g.epoch))
}

// join moves every bucket and waiter of o into g. Both are locked.
func (g *group) join(o *group) {
	delta := int64(o.epoch.Sub(g.epoch))
	for _, b := range o.members {
		// A pause far in the future (PauseUntil(year 9999) is at never)
		// and the level's last instant, moved to it, stay where they are:
		// an overflow would end the pause and refill the bucket.
		b.lvl.last = shift(b.lvl.last, delta)
		if b.paused != noPause {
			b.paused = shift(b.paused, delta)
		}
		b.g.Store(g)
	}
	g.members = append(g.members, o.members...)
	if f := shift(o.floor, delta); f > g.floor {
		g.floor = f
	}
	for w := o.head; w != nil; {
		next := w.next
		w.since = shift(w.since, delta)
		w.prev, w.next = nil, nil
		if w.rsv == nil {
			w.timer.Stop()
		}
		w.armed = never
		g.push(w)
		w = next
	}
	o.head, o.last, o.members = nil, nil, nil
	o.queued.Store(false)
	g.tailOK = false
	if g.head != nil {
		g.arm(g.now())
	}
}

// shift returns t+delta, an instant moved to another time line, saturating
// at never and at noPause (which also stay where they are).
func shift(t, delta int64) int64 {
	switch {
	case t == never || t == noPause:
		return t
	case delta > 0 && t > never-delta:
		return never
	case delta < 0 && t < noPause+1-delta:
		return noPause + 1
	}
	return t + delta
}
