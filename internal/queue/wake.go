package queue

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle/internal/exact"
)

// Wake is what one queued call sleeps on and is woken by, in a Bucket's
// queue (the core's waiter) and in a class's (htb's classWaiter) alike: its
// channel, its timer, and how its wait ended. The queue's own side of
// sleeping, serving and leaving is a WaitQueue.
type Wake struct {
	Since   int64         // instant the waiter queued; it is never served earlier
	Done    chan struct{} // one value once granted or failed; kept for reuse
	Timer   clockwork.Timer
	Armed   int64 // instant the timer is armed for; never when stopped
	Granted bool
	Err     error
}

// WaitQueue is what Sleep and Cancel need of the queue a waiter is in: a
// Bucket's group for a waiter, a domain of classes for a classWaiter. The
// waiter implements it, as it knows its queue; every method but LockNow
// and Cancelled is called with the queue locked.
type WaitQueue interface {
	LockNow() int64      // locks the waiter's queue and returns the present instant
	Unlock()             // unlocks it
	Fired(now int64)     // the waiter's timer fired: serve what is due, re-arm
	Refund(now int64)    // the waiter was granted, then cancelled: give it back
	Leave(now int64)     // the waiter was cancelled while queued: take it out
	Cancelled(now int64) // after unlock, once cancelled: tell the observers
}

// Ready gives w its channel and, on tl's clock, its timer if it has none
// yet.
func (w *Wake) Ready(tl *Timeline) {
	if w.Done == nil {
		w.Done = make(chan struct{}, 1)
		w.Timer = tl.IdleTimer()
	}
}

// SetTimer sets w's timer to fire at instant t (never: stopped), now being
// the present instant; armed holds the instant it is set for, so that
// setting the same instant again costs nothing.
func (w *Wake) SetTimer(t, now int64) {
	if t == w.Armed {
		return
	}
	w.Armed = t
	if t == exact.Never {
		w.Timer.Stop()
	} else {
		w.Timer.Reset(time.Duration(t - now))
	}
}

// Finish ends w's wait, granted or failed. The caller holds the lock and
// has taken w out of the queue, and must not touch w afterwards: w's
// Acquire call can return as soon as Done has its value, without the lock,
// and w be reused. Done has room for that one value: a waiter is finished
// at most once per use, and Reuse empties it between uses.
func (w *Wake) Finish(err error) {
	w.Granted = err == nil
	w.Err = err
	w.Timer.Stop()
	w.Armed = exact.Never
	w.Done <- struct{}{}
}

// Reuse returns the wake of a waiter to recycle, once its call has
// returned: by then it is out of the queue and its timer is stopped. A
// value left in Done (granted, then cancelled) or in the timer's channel
// (a tick that came as it was stopped) is dropped, so that the next use
// starts empty. The channel and the timer are kept; the timer was made on
// the clock of the queue, which every queue the waiter can be in shares,
// since buckets or classes joined into one share a clock. A waiter never
// queued (Done nil) has neither.
func (w *Wake) Reuse() Wake {
	if w.Done != nil {
		select {
		case <-w.Done:
		default:
		}
		select {
		case <-w.Timer.Chan():
		default:
		}
	}
	return Wake{Done: w.Done, Timer: w.Timer}
}

// Sleep waits, outside the lock, until w is granted, fails, or ctx is done;
// q is w's queue.
func (w *Wake) Sleep(ctx context.Context, q WaitQueue) error {
	for {
		select {
		case <-w.Done:
			return w.Err
		case <-w.Timer.Chan():
			// w's instant has come, as armed for the head or projected when
			// it queued. If it is not w's turn after all (a stale tick, or a
			// queue re-timed later), serving grants it nothing and w sleeps
			// again, until the head's timer or a grant wakes it.
			now := q.LockNow()
			w.Armed = exact.Never // fired, or a stale tick: either way not pending
			q.Fired(now)
			over := w.Granted || w.Err != nil
			q.Unlock()
			if over {
				// Served itself, as a head woken at its instant is: its
				// value is in done. Taken here rather than by going round
				// the select, which would lock all three channels again,
				// ctx's shared one among them, once more per grant.
				<-w.Done
				return w.Err
			}
		case <-ctx.Done():
			return w.Cancel(ctx, q)
		}
	}
}

// Cancel takes w out of its queue q. If w was granted in the meantime, its
// tokens go back: a cancelled waiter spends nothing.
func (w *Wake) Cancel(ctx context.Context, q WaitQueue) error {
	now := q.LockNow()
	if w.Err != nil {
		q.Unlock()
		return w.Err
	}
	if w.Granted {
		q.Refund(now)
	} else {
		w.Timer.Stop()
		w.Armed = exact.Never
		q.Leave(now)
	}
	q.Unlock()
	q.Cancelled(now)
	return ctx.Err()
}
