package throttle

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jonboulle/clockwork"
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
	g.start(c)
	return g
}

// timeline is what every queue shares, a group of buckets and a domain of
// classes alike: the lock, the clock and instant 0 of the time line that
// waiters' instants are counted on, and the clock their timers are made on.
type timeline struct {
	mu     sync.Mutex
	clock  clockwork.Clock // nil: the real clock, read with time.Since
	timers clockwork.Clock // never nil: where waiters sleep
	epoch  time.Time       // instant 0 of the time line
}

// start sets the time line going at c's present (nil: the real clock).
func (tl *timeline) start(c clockwork.Clock) {
	tl.clock, tl.timers = c, c
	if c == nil {
		tl.timers = clockwork.NewRealClock()
		tl.epoch = time.Now()
	} else {
		tl.epoch = c.Now()
	}
}

// line returns tl: what joinQueues locks and orders the queues by.
func (tl *timeline) line() *timeline { return tl }

// now returns the current instant: nanoseconds since the epoch. With no
// injected clock it reads the monotonic clock directly, which costs about
// half of what clockwork's real clock (time.Now().Sub) does.
func (tl *timeline) now() int64 {
	if tl.clock == nil {
		return int64(time.Since(tl.epoch))
	}
	return int64(tl.clock.Since(tl.epoch))
}

// wall returns the current time on the time line's clock.
func (tl *timeline) wall() time.Time {
	if tl.clock == nil {
		return time.Now()
	}
	return tl.clock.Now()
}

// instant converts t to the time line.
func (tl *timeline) instant(t time.Time) int64 {
	return int64(t.Sub(tl.epoch))
}

// idleTimer returns a stopped timer with nothing in its channel. On a fake
// clock it is made by firing at once, which registers nothing: a timer
// registered for a wrong instant, even briefly, would count in a test's
// BlockUntilContext, and the test's Advance could come before the real
// arming. On the real clock a stopped channel timer costs nothing until
// armed, so it is made the cheap way.
func (tl *timeline) idleTimer() clockwork.Timer {
	if tl.clock == nil {
		t := tl.timers.NewTimer(time.Hour)
		t.Stop()
		return t
	}
	t := tl.timers.NewTimer(0)
	t.Stop()
	select {
	case <-t.Chan():
	default:
	}
	return t
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
		w.links = links[waiter]{}
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

// pool keeps waiters done with for reuse, a group's and a domain's.
type pool[W any] struct{ p sync.Pool }

// get returns a waiter used before, or a new one.
func (p *pool[W]) get() *W {
	if w, ok := p.p.Get().(*W); ok {
		return w
	}
	return new(W)
}

// put keeps w, emptied by recycle, for get.
func (p *pool[W]) put(w *W) { p.p.Put(w) }

// links are a queued node's neighbours in its fifo.
type links[N any] struct{ prev, next *N }

// node is what a fifo holds: a pointer to a node with links.
type node[N any] interface {
	*N
	linked() *links[N]
}

// fifo is a doubly linked queue: the one list of waiters of both queues, a
// group's (of waiters) and each class's (of entries).
type fifo[N any, P node[N]] struct{ head, last P }

// pushBack queues n last.
func (q *fifo[N, P]) pushBack(n P) {
	l := n.linked()
	l.prev, l.next = (*N)(q.last), nil
	if q.last == nil {
		q.head = n
	} else {
		q.last.linked().next = (*N)(n)
	}
	q.last = n
}

// linkBefore queues n just before at, which is queued.
func (q *fifo[N, P]) linkBefore(at, n P) {
	a, l := at.linked(), n.linked()
	l.prev, l.next = a.prev, (*N)(at)
	if a.prev == nil {
		q.head = n
	} else {
		P(a.prev).linked().next = (*N)(n)
	}
	a.prev = (*N)(n)
}

// unlink takes n out of the queue.
func (q *fifo[N, P]) unlink(n P) {
	l := n.linked()
	if l.prev == nil {
		q.head = P(l.next)
	} else {
		P(l.prev).linked().next = l.next
	}
	if l.next == nil {
		q.last = P(l.prev)
	} else {
		P(l.next).linked().prev = l.prev
	}
	l.prev, l.next = nil, nil
}

// queue is a queue of either kind, a group of buckets or a domain of
// classes, as joinQueues and lockQueue see it.
type queue interface {
	comparable
	line() *timeline
}

// joinQueues puts the queues that items are in into one, for NewLimiter
// and NewClassLimiter: it locks every queue involved in address order, so
// that concurrent joins cannot deadlock, and, once every item is still in
// one of them (none was joined elsewhere meanwhile) and they share a
// clock, calls merge with them, to merge into the first. clocks is the
// error for queues on different clocks.
func joinQueues[I any, Q queue](items []I, queueOf func(I) Q, clocks error, merge func(qs []Q) error) error {
	for {
		var qs []Q
		for _, it := range items {
			if q := queueOf(it); !slices.Contains(qs, q) {
				qs = append(qs, q)
			}
		}
		slices.SortFunc(qs, func(a, b Q) int {
			return cmp.Compare(uintptr(unsafe.Pointer(a.line())), uintptr(unsafe.Pointer(b.line())))
		})
		for _, q := range qs {
			q.line().mu.Lock()
		}
		stale := false
		for _, it := range items {
			stale = stale || !slices.Contains(qs, queueOf(it))
		}
		var err error
		if !stale {
			for _, o := range qs[1:] {
				if o.line().clock != qs[0].line().clock {
					err = clocks
				}
			}
			if err == nil {
				err = merge(qs)
			}
		}
		for _, q := range qs {
			q.line().mu.Unlock()
		}
		if !stale {
			return err
		}
	}
}

// lockQueue locks the queue p points to and returns it. An item's queue
// changes when it is joined into another (by NewLimiter or
// NewClassLimiter), hence the check after locking.
func lockQueue[T any, Q interface {
	*T
	queue
}](p *atomic.Pointer[T]) Q {
	for {
		q := Q(p.Load())
		q.line().mu.Lock()
		if Q(p.Load()) == q {
			return q
		}
		q.line().mu.Unlock()
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
