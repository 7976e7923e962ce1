package throttle

import "context"

// maxOvertake bounds how far priorities reorder a queue (see WithPriority).
const maxOvertake = 16

type priorityKey struct{}

// WithPriority returns a copy of ctx that carries priority p for Acquire
// (on a Bucket, a Limiter or a Keyed limiter, and through a Transport),
// so that interactive calls and batch jobs can share one quota without
// batch delaying interactive. The default priority is 0; a higher value
// is served first: a waiter queues ahead of the waiters of lower priority
// already queued, except that it passes none that has been passed 16
// times already, nor a Reservation (whose Delay was promised). So a waiter
// of low priority is never starved: it is served after at most 16 waiters
// that queued after it, whatever their priority.
// Within a priority the queue is FIFO. TryAcquire never jumps a queue, and
// Reserve and WaitTime take the place of priority 0 at the end.
//
// A waiter's instant is worked out for its place in the queue: a deadline
// too short for it fails fast as usual, and waiters it passes are re-timed
// later, as if the queue had been that way from the start.
func WithPriority(ctx context.Context, p int) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// priorityOf returns the priority WithPriority put in ctx, or 0.
func priorityOf(ctx context.Context) int {
	p, _ := ctx.Value(priorityKey{}).(int)
	return p
}

// insertionPoint returns the waiter before which a waiter of priority p
// goes, or nil for the end of the queue: the common case, one comparison.
func (g *group) insertionPoint(p int) *waiter {
	var at *waiter
	for v := g.Last; v != nil && v.priority < p && v.overtaken < maxOvertake && v.rsv == nil; v = v.Prev {
		at = v
	}
	return at
}

// projectBefore returns the instant costs could be taken from bs if
// queued now just before waiter at. It works through the tail levels, so
// the projection is to be made again.
func (g *group) projectBefore(at *waiter, bs []*Bucket, costs []int64, now int64) int64 {
	for _, m := range g.members {
		m.tail = m.lvl
	}
	g.tailOK = false
	t := g.floor
	for v := g.Head; v != at; v = v.Next {
		t = readyAt(v.bs, v.costs, v.Since, t, true)
		spend(v.bs, v.costs, t, true)
	}
	return readyAt(bs, costs, now, t, true)
}

// insertBefore queues w just before at, counting the overtaking against
// every waiter w passes.
func (g *group) insertBefore(at, w *waiter) {
	for v := at; v != nil; v = v.Next {
		v.overtaken++
	}
	g.LinkBefore(at, w)
	g.tailOK = false
}
