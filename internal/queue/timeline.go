package queue

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
)

// Outlasts reports whether a wait of wait from now ends after ctx's
// deadline, read on tl's clock (a fake one in tests): a call fails fast
// then, rather than queue.
func (tl *Timeline) Outlasts(ctx context.Context, wait time.Duration) bool {
	dl, ok := ctx.Deadline()
	return ok && dl.Sub(tl.Wall()) < wait
}

// DoneNow reports whether ctx is done already, for a call that fails
// rather than queue then. A context that is never done (Background, and so
// most requests' contexts) has no channel: no select then, which keeps the
// runtime's channel code off a path that HTTP requests take cold.
func DoneNow(ctx context.Context) bool {
	if d := ctx.Done(); d != nil {
		select {
		case <-d:
			return true
		default:
		}
	}
	return false
}

// Timeline is what every queue shares, a group of buckets and a domain of
// classes alike: the lock, the clock and instant 0 of the time line that
// waiters' instants are counted on, and the clock their timers are made on.
type Timeline struct {
	Mu     sync.Mutex
	Clock  clockwork.Clock // nil: the real clock, read with time.Since
	Timers clockwork.Clock // never nil: where waiters sleep
	Epoch  time.Time       // instant 0 of the time line
}

// Start sets the time line going at c's present (nil: the real clock).
func (tl *Timeline) Start(c clockwork.Clock) {
	tl.Clock, tl.Timers = c, c
	if c == nil {
		tl.Timers = clockwork.NewRealClock()
		tl.Epoch = time.Now()
	} else {
		tl.Epoch = c.Now()
	}
}

// Line returns tl: what Join locks and orders the queues by.
func (tl *Timeline) Line() *Timeline { return tl }

// Now returns the current instant: nanoseconds since the epoch. With no
// injected clock it reads the monotonic clock directly, which spares the
// wall-clock read that clockwork's real clock (time.Now().Sub) makes.
func (tl *Timeline) Now() int64 {
	if tl.Clock == nil {
		return int64(time.Since(tl.Epoch))
	}
	return int64(tl.Clock.Since(tl.Epoch))
}

// Wall returns the current time on the time line's clock.
func (tl *Timeline) Wall() time.Time {
	if tl.Clock == nil {
		return time.Now()
	}
	return tl.Clock.Now()
}

// Instant converts t to the time line.
func (tl *Timeline) Instant(t time.Time) int64 {
	return int64(t.Sub(tl.Epoch))
}

// IdleTimer returns a stopped timer with nothing in its channel. On a fake
// clock it is made by firing at once, which registers nothing: a timer
// registered for a wrong instant, even briefly, would count in a test's
// BlockUntilContext, and the test's Advance could come before the real
// arming. On the real clock a stopped channel timer costs nothing until
// armed, so it is made the cheap way.
func (tl *Timeline) IdleTimer() clockwork.Timer {
	if tl.Clock == nil {
		t := tl.Timers.NewTimer(time.Hour)
		t.Stop()
		return t
	}
	t := tl.Timers.NewTimer(0)
	t.Stop()
	select {
	case <-t.Chan():
	default:
	}
	return t
}

// Lock locks the queue p points to and returns it. An item's queue
// changes when it is joined into another (by NewLimiter or
// htb.NewLimiter), hence the check after locking.
func Lock[T any, Q interface {
	*T
	Queue
}](p *atomic.Pointer[T]) Q {
	for {
		q := Q(p.Load())
		q.Line().Mu.Lock()
		if Q(p.Load()) == q {
			return q
		}
		q.Line().Mu.Unlock()
	}
}
