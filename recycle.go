package throttle

import "github.com/jonboulle/clockwork"

// waiter returns a waiter to fill in for one Acquire call: one used before
// when there is one, so that a call that queues does not allocate a
// waiter, a channel and a timer each time. With many goroutines blocked on
// a slow limiter, those allocations and their collection were a tenth of
// the CPU spent per grant.
func (g *group) waiter() *waiter {
	if w, ok := g.idle.Get().(*waiter); ok {
		return w
	}
	return &waiter{}
}

// prepare returns a waiter ready to queue, channel and timer made, when
// waiters are queued already, and nil otherwise. It is called before the
// lock is taken: a call that finds others queued will queue too, and
// making its waiter there keeps the allocations out of the group's
// critical section. With a thousand goroutines arriving at once, those
// made under the lock were most of the 3 µs by which queueing one cost
// more than x/time/rate's Wait.
func (g *group) prepare() *waiter {
	if !g.queued.Load() {
		return nil
	}
	w := g.waiter()
	g.ready(w)
	return w
}

// ready gives w its channel and timer if it has none yet.
func (g *group) ready(w *waiter) {
	if w.done == nil {
		w.done = make(chan struct{}, 1)
		w.timer = g.idleTimer()
	}
}

// recycle takes back w, which g.waiter returned, once its Acquire call has
// returned: by then w is out of the queue and its timer is stopped. A
// value left in done (granted, then cancelled) or in the timer's channel
// (a tick that came as it was stopped) is dropped, so that the next use
// starts empty. The channel and the timer are kept; the timer was made on
// g's clock, which every group w can be queued in shares, since buckets
// joined into one group share a clock.
func (g *group) recycle(w *waiter) {
	drainWaiter(w.done, w.timer)
	*w = waiter{done: w.done, timer: w.timer}
	g.idle.Put(w)
}

// drainWaiter drops what a finished waiter may have left in its channel
// and its timer's, for group.recycle and domain.recycle alike; a waiter
// never queued (done nil) has neither.
func drainWaiter(done chan struct{}, timer clockwork.Timer) {
	if done == nil {
		return
	}
	select {
	case <-done:
	default:
	}
	select {
	case <-timer.Chan():
	default:
	}
}
