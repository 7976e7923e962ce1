package throttle

import (
	"context"
	"time"

	"github.com/throttlekit/throttle/internal/exact"
	"github.com/throttlekit/throttle/internal/queue"
)

// waiter is one Acquire call in a group's queue. Each waiter owns a timer.
// The head's is always armed, for its instant: timers are armed by whoever
// changes the queue or a level, under the group's lock, so a waiter never
// wakes just to learn that it moved up, and the head's timer fires only at
// its instant: a grant wakes one goroutine, not the queue. On the real
// clock (group.ahead) every waiter also arms its own timer as it queues,
// for the instant projected for it then, as x/time/rate's waiters do: in
// steady state that is the instant it becomes due, so when it becomes the
// head its timer is already right and nobody resets a timer that has
// become the process's earliest (which makes the runtime wake a thread to
// watch it). That timer is only a hint: a waiter it wakes before its turn
// (the queue was re-timed later) serves nothing and sleeps on, and one
// re-timed earlier is armed again when it becomes the head.
type waiter struct {
	wake
	links[waiter]
	bs        []*Bucket
	costs     []int64
	queued    bool // it went into the queue, at since
	one       [1]*Bucket
	oneCost   [1]int64
	rsv       *Reservation // set for a reservation: no goroutine sleeps on it, no timer
	priority  int          // from the context; see WithPriority
	overtaken int          // waiters queued after it and served before it
	why       *WaitError   // its wait explained, made only for observers
}

// arm sets the head's timer for its instant, which serve has left in the
// future, and leaves it alone when it is already right. Reservations at the
// head have no goroutine to wake: then the first waiter behind them that
// has one is armed, for its instant once they are served at theirs.
func (g *group) arm(now int64) {
	h := g.Head
	if h.rsv == nil {
		h.SetTimer(readyAt(h.bs, h.costs, h.Since, g.floor, false), now)
		return
	}
	for w := h; w != nil; w = w.Next {
		if w.rsv == nil {
			w.SetTimer(g.instantOf(w), now)
			return
		}
	}
}

// instantOf returns the instant queued waiter w will be served, given the
// waiters ahead of it. It uses the tail levels to work it out, and so
// leaves the projection to be made again.
func (g *group) instantOf(w *waiter) int64 {
	for _, m := range g.members {
		m.tail = m.lvl
	}
	g.tailOK = false
	t := g.floor
	for v := g.Head; ; v = v.Next {
		t = readyAt(v.bs, v.costs, v.Since, t, true)
		if v == w || t == exact.Never {
			return t
		}
		spend(v.bs, v.costs, t, true)
	}
}

// finish is wake.finish for a waiter that may be a reservation, which has
// no goroutine to wake and no timer.
func (w *waiter) Finish(err error) {
	if w.rsv != nil {
		w.Granted, w.Err = err == nil, err
		return
	}
	w.wake.Finish(err)
}

func (w *waiter) Linked() *links[waiter] { return &w.links }

// push queues w last, keeping queued.
func (g *group) push(w *waiter) {
	if g.Head == nil {
		g.queued.Store(true)
	}
	g.PushBack(w)
}

// remove takes w out of the queue, keeping queued.
func (g *group) remove(w *waiter) {
	g.Unlink(w)
	if g.Head == nil {
		g.queued.Store(false)
	}
}

// readyAt is the instant at which costs can be taken from bs, served after
// floor and not before since: the latest of the per-limit instants and of
// the limits' pauses. It reads the tail levels when tail is set.
func readyAt(bs []*Bucket, costs []int64, since, floor int64, tail bool) int64 {
	t := max(since, floor)
	for i, b := range bs {
		c := costs[i]
		if c == 0 {
			continue
		}
		l := b.level(tail)
		t = max(t, b.paused, b.ReadyAt(l, c))
	}
	return t
}

// level is b's level now, or with tail its level after every queued
// waiter is served.
func (b *Bucket) level(tail bool) *level {
	if tail {
		return &b.tail
	}
	return &b.lvl
}

// spend takes costs from bs at instant t.
func spend(bs []*Bucket, costs []int64, t int64, tail bool) {
	for i, b := range bs {
		if costs[i] == 0 {
			continue
		}
		l := b.level(tail)
		b.Advance(l, t)
		l.Take(costs[i])
	}
}

// serve grants, in order, every queued waiter whose instant has come. Each
// is granted at the instant its tokens existed, not at now: a timer that
// fires late must not lose the refill of the time it overslept. The new
// head, if any, is told to sleep until its own instant.
func (g *group) serve(now int64) {
	first := g.Head
	for w := g.Head; w != nil; w = g.Head {
		t := readyAt(w.bs, w.costs, w.Since, g.floor, false)
		if t > now {
			break
		}
		spend(w.bs, w.costs, t, false)
		g.floor = t
		g.remove(w)
		if w.rsv != nil {
			w.rsv.at = g.Epoch.Add(time.Duration(t))
		}
		w.Finish(nil)
	}
	if g.Head == nil {
		g.tailOK = false
	} else if g.Head != first {
		g.arm(now)
	}
}

// changed must follow any change to a member's level, rate or pause: it
// re-times every queued waiter.
func (g *group) changed(now int64) {
	g.tailOK = false
	first := g.Head
	g.serve(now)
	if g.Head != nil && g.Head == first {
		g.arm(now)
	}
}

// project returns the instant at which costs could be taken from bs if
// queued now behind every waiter. It leaves in the members' tail levels and
// in tailAt the state once every queued waiter is served, and keeps them
// for the next call only while tailValid says they stay right.
func (g *group) project(bs []*Bucket, costs []int64, now int64) int64 {
	if !g.tailValid() {
		for _, m := range g.members {
			m.tail = m.lvl
		}
		g.tailAt = g.floor
		for w := g.Head; w != nil; w = w.Next {
			g.tailAt = readyAt(w.bs, w.costs, w.Since, g.tailAt, true)
			spend(w.bs, w.costs, g.tailAt, true)
		}
		g.tailOK = g.Head != nil
	}
	return readyAt(bs, costs, now, g.tailAt, true)
}

// tailValid is the one test of whether the projection project keeps is
// current. It is while waiters are queued and nothing but their own grants
// (which spend what the projection already spent) has changed a level,
// rate, pause or the queue since it was made: changed and a waiter leaving
// clear tailOK. With nobody queued it never is, whatever tailOK says:
// takeNow and TryAcquire then spend from the levels, through no call that
// would clear it, so a projection made when the queue was empty (by an
// Acquire that failed fast, say) would go stale unseen.
func (g *group) tailValid() bool { return g.tailOK && g.Head != nil }

// check validates costs against bs. A zero cost leaves that limit out, but
// at least one cost must be positive.
func check(bs []*Bucket, costs []int64) error {
	if len(costs) != len(bs) {
		return costCount(len(costs), len(bs))
	}
	any := false
	for i, c := range costs {
		if c < 0 {
			return limitErr(bs[i], ErrInvalidCost, c)
		}
		if err := over(&bs[i].shape, c); err != nil {
			return limitErr(bs[i], err, c)
		}
		any = any || c > 0
	}
	if !any {
		return errNoPositiveCost
	}
	return nil
}

// over returns the error for a cost s can never cover: errClosed
// when it is closed, ErrCostExceedsCapacity when the cost is above its
// capacity; nil otherwise.
func over(s *shape, cost int64) error {
	switch {
	case cost <= s.Cap || s.Inf:
		return nil
	case s.Cap == 0:
		return errClosed
	}
	return ErrCostExceedsCapacity
}

// noRefill names the first limit that will never cover its cost because it
// does not refill. It returns nil when the wait is merely longer than a
// time.Duration can hold.
func noRefill(bs []*Bucket, costs []int64) error {
	for i, b := range bs {
		if costs[i] > 0 && b.Num == 0 {
			return limitErr(b, errNoRefill, costs[i])
		}
	}
	return nil
}

// waitTime implements WaitTime for a set of buckets sharing one group.
func waitTime(bs []*Bucket, costs []int64) (time.Duration, error) {
	if len(bs) == 1 && len(costs) == 1 && costs[0] <= 0 {
		return 0, errNotPositive
	}
	g := bs[0].lock()
	defer g.Mu.Unlock()
	if err := check(bs, costs); err != nil {
		return 0, err
	}
	now := g.Now()
	g.serve(now)
	t := g.waitUntil(bs, costs, now)
	if t == exact.Never {
		if err := noRefill(bs, costs); err != nil {
			return 0, err
		}
	}
	return time.Duration(t - now), nil
}

// waitUntil is the instant WaitTime reports for costs, with g locked and
// served at now: now if they can be taken now, else the instant they could
// be taken if queued now behind every waiter; never if that will not come.
func (g *group) waitUntil(bs []*Bucket, costs []int64, now int64) int64 {
	if g.Head == nil {
		if covers(bs, costs, now) {
			return now
		}
		return readyAt(bs, costs, now, g.floor, false)
	}
	return g.project(bs, costs, now)
}

// rejectedWhy is the explanation of a refused TryAcquire's events: what
// WaitTime would have said at that moment, or nil when the costs will
// never pass (or, the refusal coming from the queue alone, at once).
func (g *group) rejectedWhy(bs []*Bucket, costs []int64, now int64) *WaitError {
	if t := g.waitUntil(bs, costs, now); t != exact.Never {
		return g.explainWait(bs, costs, now, t, g.Len, g.Head != nil)
	}
	return nil
}

// Acquire waits until cost tokens can be taken, then takes them. Waiters
// are served in the order they called Acquire: a large request queued first
// is served before smaller ones that come after it.
//
// Acquire returns at once, spending nothing, with a *WaitError (which
// matches context.DeadlineExceeded) when ctx's deadline, read on the
// bucket's clock, comes before the instant the tokens could be granted. A
// waiter whose ctx is done leaves the queue, spends nothing and returns
// ctx.Err(). It fails with ErrInvalidCost, ErrCostExceedsCapacity,
// errClosed on a closed bucket, or, when the rate is zero and the level
// cannot cover cost, errNoRefill. A ctx made by WithPriority queues ahead
// of waiters of lower priority, within the bound maxOvertake states.
func (b *Bucket) Acquire(ctx context.Context, cost int64) error {
	if cost <= 0 {
		return errNotPositive
	}
	b.grp() // the zero Bucket's group, made on first use (see tryOrLock)
	bs, costs := [1]*Bucket{b}, [1]int64{cost}
	g, w, now, done, err := tryOrWaiter(ctx, bs[:], costs[:], b.obs != nil)
	if done {
		return err
	}
	w.one[0], w.oneCost[0] = b, cost
	w.bs, w.costs = w.one[:], w.oneCost[:]
	queued, err := enqueue(ctx, w, g, now)
	if queued {
		err = w.await(ctx, g, now)
	}
	g.recycle(w)
	return err
}

// tryOrLock settles an acquisition that needs no waiting: it takes the
// costs if nobody is queued and the levels allow, or fails. When the
// caller must queue it reports done=false and returns with g, the
// buckets' group, still locked, and now read under the lock, for enqueue.
// It keeps no reference to bs or costs, so the callers' slices can live on
// the stack: a grant at once allocates nothing. obs says whether any of bs
// has an observer: without one a grant reports nothing, and makes no call
// to do so. One lock per queued call instead of two: with a thousand
// goroutines arriving at once on a slow limiter, the second pass through a
// contended lock was a third of their CPU.
//
// bs[0] has its group: a Limiter's buckets were joined into one, and
// Bucket.Acquire makes the zero Bucket's first.
func tryOrLock(ctx context.Context, bs []*Bucket, costs []int64, obs bool) (g *group, now int64, done bool, err error) {
	g = queue.Lock(&bs[0].g)
	if err := check(bs, costs); err != nil {
		g.Mu.Unlock()
		return g, 0, true, err
	}
	if queue.DoneNow(ctx) {
		g.Mu.Unlock()
		observe(bs, costs, EventCancelled, 0)
		return g, 0, true, ctx.Err()
	}
	// With waiters queued the caller queues too: serving them here would
	// wake the head from this goroutine, where its own armed timer wakes it
	// more cheaply, and changes no instant.
	now = g.Now()
	if g.Head != nil && g.Head.rsv != nil {
		g.serve(now) // reservations have no goroutine to serve them when due
	}
	if !g.takeNow(bs, costs, now) {
		return g, now, false, nil
	}
	g.Mu.Unlock()
	if obs {
		observe(bs, costs, EventGranted, 0)
	}
	return g, now, true, nil
}

// tryOrWaiter is tryOrLock for a caller that queues next with a waiter:
// when it reports done=false, g is locked and w is the waiter to queue,
// made before the lock was taken when waiters were queued already (see
// prepare).
func tryOrWaiter(ctx context.Context, bs []*Bucket, costs []int64, obs bool) (g *group, w *waiter, now int64, done bool, err error) {
	if g := bs[0].g.Load(); g.queued.Load() {
		w = g.prepare()
	}
	g, now, done, err = tryOrLock(ctx, bs, costs, obs)
	if done {
		if w != nil {
			g.recycle(w)
		}
		return g, nil, now, true, err
	}
	if w == nil {
		w = g.waiter()
	}
	return g, w, now, false, nil
}

// takeNow takes costs from bs at now if nobody is queued and covers says
// so; it reports whether it did.
func (g *group) takeNow(bs []*Bucket, costs []int64, now int64) bool {
	if g.Head != nil || !covers(bs, costs, now) {
		return false
	}
	for i, b := range bs {
		b.lvl.Take(costs[i])
	}
	return true
}

// covers advances bs to now and reports whether, at now, no pause is on and
// every level covers its cost. After a clock went back, the level is the
// one already reached: elapsed time counts as zero, so it neither refills
// nor withholds what is there, as Bucket.TryAcquire does.
func covers(bs []*Bucket, costs []int64, now int64) bool {
	for i, b := range bs {
		if costs[i] == 0 {
			continue
		}
		b.Advance(&b.lvl, now)
		if now < b.paused || (b.lvl.Tokens < costs[i] && !b.Inf) {
			return false
		}
	}
	return true
}

// enqueue queues w, whose costs could not be taken at now, unless its
// wait would outlast ctx's deadline or never end: g, w's group, is locked,
// and enqueue unlocks it. When it reports queued, the caller waits with
// w.await; it is left to the caller so that enqueue's frame is gone from
// the stack by then. With the sleep called from in here, every goroutine's
// first sleep grew its starting stack (a runtime.copystack each), which
// about doubled the CPU of a goroutine queueing (BenchmarkWaitersQueueIn;
// benchmarks/README.md has the figures).
func enqueue(ctx context.Context, w *waiter, g *group, now int64) (queued bool, err error) {
	w.priority = priorityOf(ctx)
	before := g.insertionPoint(w.priority)
	var t int64
	if before == nil {
		t = g.project(w.bs, w.costs, now)
	} else {
		t = g.projectBefore(before, w.bs, w.costs, now)
	}
	if t == exact.Never {
		if err := noRefill(w.bs, w.costs); err != nil {
			g.Mu.Unlock()
			return false, err
		}
	}
	wait := time.Duration(t - now)
	if g.Outlasts(ctx, wait) {
		why := g.explain(w.bs, w.costs, now, t, g.aheadOf(before), true)
		why.Wait = wait
		g.Mu.Unlock()
		observeWhy(w.bs, w.costs, EventRejected, wait, &why)
		return false, &why
	}
	if observed(w.bs) {
		w.why = g.explainWait(w.bs, w.costs, now, t, g.aheadOf(before), true)
	}
	w.Since, w.queued = now, true
	g.ready(w)
	w.Armed = exact.Never
	if before == nil {
		// The projection just made, extended by w: current, as w is queued.
		spend(w.bs, w.costs, t, true)
		g.tailAt, g.tailOK = t, true
		g.push(w)
	} else {
		g.insertBefore(before, w)
	}
	if w.Prev == nil || g.Head.rsv != nil {
		g.arm(now) // w is the head, or may be the first waiter behind reservations
	} else if g.ahead {
		w.SetTimer(t, now)
	}
	g.Mu.Unlock()
	return true, nil
}

// await waits until w, which enqueue queued in g at now, is granted or
// fails, and reports a grant to the observers.
func (w *waiter) await(ctx context.Context, g *group, now int64) error {
	err := w.Sleep(ctx, w)
	if err == nil && observed(w.bs) {
		observeWhy(w.bs, w.costs, EventGranted, time.Duration(g.Now()-now), w.why)
	}
	return err
}

// aheadOf is how many waiters are queued ahead of one inserted before
// at: all of them when at is nil (it goes last).
func (g *group) aheadOf(at *waiter) int {
	if at == nil {
		return g.Len
	}
	n := 0
	for v := g.Head; v != nil && v != at; v = v.Next {
		n++
	}
	return n
}

// group returns the group w is queued in; the caller holds its lock, so
// it cannot change.
func (w *waiter) group() *group { return w.bs[0].g.Load() }

// A waiter is the queue.WaitQueue of its group, for Wake.Sleep and
// Wake.Cancel.

func (w *waiter) LockNow() int64 { return w.bs[0].lock().Now() }

func (w *waiter) Unlock() { w.group().Mu.Unlock() }

func (w *waiter) Fired(now int64) {
	g := w.group()
	g.serve(now)
	if !w.Granted && w.Err == nil {
		g.arm(now)
	}
}

func (w *waiter) Refund(now int64) {
	g := w.group()
	g.serve(now)
	for i, b := range w.bs {
		b.Advance(&b.lvl, now)
		b.Give(&b.lvl, w.costs[i])
	}
	g.changed(now)
}

func (w *waiter) Leave(now int64) {
	g := w.group()
	wasHead := g.Head == w
	g.remove(w)
	g.tailOK = false
	if wasHead {
		g.changed(now)
	} else if g.Head.rsv != nil {
		g.arm(now) // w may have been the waiter armed behind reservations
	}
}

func (w *waiter) Cancelled(now int64) {
	observeWhy(w.bs, w.costs, EventCancelled, time.Duration(now-w.Since), w.why)
}
