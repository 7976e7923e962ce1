package throttle

// waiter returns a waiter to fill in for one Acquire call: one used before
// when there is one, so that a call that queues does not allocate a
// waiter, a channel and a timer each time. With many goroutines blocked on
// a slow limiter, those allocations and their collection were a tenth of
// the CPU spent per grant.
func (g *group) waiter() *waiter {
	return g.idle.Get()
}

// prepare returns a waiter ready to queue, channel and timer made, for a
// call that found waiters queued already. It is called before the lock
// is taken: a call that finds others queued will queue too, and making
// its waiter there keeps the allocations out of the group's critical
// section, which every goroutine arriving at once waits on.
func (g *group) prepare() *waiter {
	w := g.waiter()
	g.ready(w)
	return w
}

// ready gives w its channel and timer if it has none yet.
func (g *group) ready(w *waiter) { w.Ready(&g.timeline) }

// recycle takes back w, which g.waiter returned, once its Acquire call has
// returned (see wake.reuse).
func (g *group) recycle(w *waiter) {
	*w = waiter{wake: w.Reuse()}
	g.idle.Put(w)
}
