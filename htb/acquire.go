package htb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/exact"
	"github.com/throttlekit/throttle/internal/queue"
)

// centry is a waiter's place in one class's FIFO queue.
type centry struct {
	queue.Links[centry]
	w *classWaiter
	c *Class
}

func (e *centry) Linked() *queue.Links[centry] { return &e.Links }

// classWaiter is one Acquire call on one or several classes (one per
// hierarchy). It is a candidate once it heads the queue of every class it
// waits on. As with a Bucket's waiters, only the waiter to be served next
// has its timer armed, so a grant wakes one goroutine.
type classWaiter struct {
	queue.Wake
	cs      []*Class
	costs   []int64
	plan    []int // the lender's index on each class's path, once granted
	ents    []centry
	virtual bool // a projection, never put in the queues for real

	gen  uint64 // serve round in which it was last looked at
	at   int64  // instant computed for it in this round
	opts []classOpt

	oneC    [1]*Class
	oneCost [1]int64
	onePlan [1]int
	oneEnt  [1]centry
}

// classOpt is one way to cover one class's cost: from the spare of the
// node at index j of its path.
type classOpt struct {
	t     int64 // first instant it covers the cost
	bound bool  // the lender's spare is what it waits for
	skip  bool  // another borrower is owed the lender's spare first
}

func (d *domain) waiter(cs []*Class, costs []int64) *classWaiter {
	w := d.idle.Get()
	if len(cs) == 1 {
		w.oneC[0], w.oneCost[0] = cs[0], costs[0]
		w.cs, w.costs, w.plan, w.ents = w.oneC[:], w.oneCost[:], w.onePlan[:], w.oneEnt[:]
	} else {
		// Copies, so that the callers' slices can live on their stacks.
		w.cs, w.costs = slices.Clone(cs), slices.Clone(costs)
		w.plan, w.ents = make([]int, len(cs)), make([]centry, len(cs))
	}
	for i := range w.ents {
		w.ents[i] = centry{w: w, c: w.cs[i]}
	}
	w.Armed = exact.Never
	return w
}

// recycle is group.recycle for a classWaiter.
func (d *domain) recycle(w *classWaiter) {
	*w = classWaiter{Wake: w.Reuse(), opts: w.opts[:0]}
	d.idle.Put(w)
}

// push queues w last in the queue of each of its classes.
func (d *domain) push(w *classWaiter) {
	for i := range w.ents {
		w.ents[i].c.PushBack(&w.ents[i])
	}
	d.queued++
}

// remove takes w out of its classes' queues.
func (d *domain) remove(w *classWaiter) {
	for i := range w.ents {
		w.ents[i].c.Unlink(&w.ents[i])
	}
	d.queued--
}

// pushFront puts w back at the head of its queues, undoing remove of a
// head.
func (d *domain) pushFront(w *classWaiter) {
	for i := range w.ents {
		e := &w.ents[i]
		if e.c.Head == nil {
			e.c.PushBack(e)
		} else {
			e.c.LinkBefore(e.c.Head, e)
		}
	}
	d.queued++
}

// heads reports whether w heads every queue it is in.
func (w *classWaiter) heads() bool {
	for i := range w.ents {
		if w.ents[i].Prev != nil {
			return false
		}
	}
	return true
}

// checkClasses validates costs on cs, one per class and at least one
// positive; a cost must fit the quota and every ceiling on the path.
// errClosed is the error of a class of a closed quota (capacity 0), which
// admits nothing: TryAcquire is refused rather than failed.
var errClosed = fmt.Errorf("%w: the quota is closed (capacity 0) and admits nothing", throttle.ErrCostExceedsCapacity)

func checkClasses(cs []*Class, costs []int64) error {
	if len(costs) != len(cs) {
		return classCount(len(costs), len(cs))
	}
	any := false
	for i, c := range cs {
		n := costs[i]
		if n < 0 {
			return fmt.Errorf("%s: %w", className(c), throttle.ErrInvalidCost)
		}
		if c.removed {
			return fmt.Errorf("%s: %w", className(c), ErrClassRemoved)
		}
		if n == 0 {
			continue
		}
		if root := c.path[len(c.path)-1]; root.g.Cap == 0 {
			return fmt.Errorf("%s: %w", className(root), errClosed)
		}
		any = true
		for _, m := range c.path {
			capacity := m.c.Cap
			if m.parent == nil {
				capacity = m.g.Cap
			}
			if n > capacity {
				return fmt.Errorf("%s: %w: cost %d, capacity %d", className(m), throttle.ErrCostExceedsCapacity, n, capacity)
			}
		}
	}
	if !any {
		return throttle.ErrInvalidCost
	}
	return nil
}

// coversNow reports, advancing levels to now, whether cost n on c can be
// taken now from the spare of path[j]: the ceilings of the path and the
// guarantee buckets above the lender cover n, and so does the lender's
// spare.
func (c *Class) coversNow(n int64, j int, now int64) bool {
	p := c.path
	for _, m := range p[j+1:] {
		m.g.Advance(&m.gl, now)
		if m.gl.Tokens < n {
			return false
		}
	}
	return p[j].spareCovers(n, now)
}

// ceilsCover advances the ceilings of c's path to now and reports whether
// they cover n.
func (c *Class) ceilsCover(n, now int64) bool {
	p := c.path
	for _, m := range p[:len(p)-1] {
		m.c.Advance(&m.cl, now)
		if m.cl.Tokens < n {
			return false
		}
	}
	return true
}

// planNow returns the lowest index on c's path whose spare covers n now,
// or -1; borrow says whether it may be above c.
func (c *Class) planNow(n, now int64, borrow bool) int {
	if !c.ceilsCover(n, now) {
		return -1
	}
	top := len(c.path)
	if !borrow {
		top = 1
	}
	for j := 0; j < top; j++ {
		if c.coversNow(n, j, now) {
			return j
		}
	}
	return -1
}

// take spends n on c's path at t, from the spare of path[j].
func (d *domain) take(c *Class, n int64, j int, t int64) {
	p := c.path
	for _, m := range p[:len(p)-1] {
		m.c.Advance(&m.cl, t)
	}
	for _, m := range p[j:] {
		m.g.Advance(&m.gl, t)
	}
	d.spend(c, n, j)
}

// spend is take once planNow has advanced the levels it spends.
func (d *domain) spend(c *Class, n int64, j int) {
	p := c.path
	for _, m := range p[:len(p)-1] {
		m.cl.Take(n)
	}
	for _, m := range p[j:] {
		m.gl.Take(n)
	}
	if j > 0 {
		l, k := p[j], p[j-1]
		start := maxTag(k.tag, l.vt)
		k.tag = start.plus(n, k.g.Den, k.g.Num)
		l.vt = start
	}
}

// giveBack corrects a grant of cost on c's path from path[j] to actual
// use: a refund goes back where the grant was taken (never above
// capacity); an overrun is charged to every bucket on the path, the
// class's own guarantee included, so that the class itself repays it and
// every ancestor still holds what its children hold.
func giveBack(c *Class, cost, actual int64, j int, now int64) {
	p := c.path
	diff := actual - cost
	if diff == 0 {
		return
	}
	for _, m := range p[:len(p)-1] {
		m.c.Advance(&m.cl, now)
		if diff < 0 {
			m.c.Give(&m.cl, -diff)
		} else {
			m.cl.Take(diff)
		}
	}
	if diff < 0 {
		for _, m := range p[j:] {
			m.g.Advance(&m.gl, now)
			m.g.Give(&m.gl, -diff)
		}
		return
	}
	for _, m := range p {
		m.g.Advance(&m.gl, now)
		m.gl.Take(diff)
	}
}

// TryAcquire takes cost tokens for c if it can now: from c's own
// guarantee when nobody waits in c's queue, or borrowed when nobody waits
// anywhere in the hierarchy. It never blocks, and a refusal spends
// nothing.
func (c *Class) TryAcquire(cost int64) (bool, error) {
	if cost <= 0 {
		return false, throttle.ErrInvalidCost
	}
	d := c.lock()
	now := d.Now()
	if now < d.seen {
		now = d.seen
	}
	if c.removed || cost > c.path[len(c.path)-1].g.Cap || (c.parent != nil && cost > c.c.Cap) {
		d.Mu.Unlock()
		cs, costs := [1]*Class{c}, [1]int64{cost}
		if err := checkClasses(cs[:], costs[:]); !errors.Is(err, errClosed) {
			return false, err
		}
		return false, nil // a closed quota refuses, as a closed bucket does
	}
	if d.queued > 0 {
		d.serve(now)
	}
	d.seen = now
	j := -1
	if c.Head == nil {
		j = c.planNow(cost, now, d.queued == 0)
	}
	if j >= 0 {
		d.spend(c, cost, j)
		if d.onGrant != nil {
			d.onGrant(c.self[:], []int64{cost}, now)
		}
		if d.queued > 0 {
			d.serve(now)
		}
	}
	d.Mu.Unlock()
	return j >= 0, nil
}

// tryAll takes costs from cs now if every class can, reporting whether it
// did and filling plan.
func (d *domain) tryAll(cs []*Class, costs []int64, plan []int, now int64) bool {
	for i, c := range cs {
		if c.Head != nil && costs[i] > 0 {
			return false
		}
	}
	for i, c := range cs {
		plan[i] = 0
		if costs[i] == 0 {
			continue
		}
		if plan[i] = c.planNow(costs[i], now, d.queued == 0); plan[i] < 0 {
			return false
		}
	}
	for i, c := range cs {
		if costs[i] > 0 {
			d.spend(c, costs[i], plan[i])
		}
	}
	if d.onGrant != nil {
		// Copies: the hook must not make the callers' slices escape.
		d.onGrant(slices.Clone(cs), slices.Clone(costs), now)
	}
	return true
}

// queuedIn counts the waiters queued on c, which a new waiter on c
// follows: FIFO within a class. The lock is held.
func queuedIn(c *Class) int {
	n := 0
	for e := c.Head; e != nil; e = e.Next {
		n++
	}
	return n
}

// acquireClasses is Acquire on cs: it takes costs at once if it can, or
// queues, and fills plan with the lenders used.
func acquireClasses(ctx context.Context, cs []*Class, costs []int64, plan []int) error {
	d := cs[0].lock()
	if err := checkClasses(cs, costs); err != nil {
		d.Mu.Unlock()
		return err
	}
	if queue.DoneNow(ctx) {
		d.Mu.Unlock()
		return ctx.Err()
	}
	now := max(d.Now(), d.seen)
	if d.queued > 0 {
		d.serve(now)
	}
	d.seen = now
	if d.tryAll(cs, costs, plan, now) {
		if d.queued > 0 {
			d.serve(now)
		}
		d.Mu.Unlock()
		return nil
	}
	w := d.waiter(cs, costs)
	t := d.project(w, now)
	wait := time.Duration(math.MaxInt64)
	if t != exact.Never {
		wait = time.Duration(t - now)
	}
	if d.Outlasts(ctx, wait) {
		ahead := queuedIn(cs[0]) // FIFO within a class: these go first
		d.Mu.Unlock()
		d.recycle(w)
		return &throttle.WaitError{Wait: wait, Limit: cs[0].name, Ahead: ahead}
	}
	w.Ready(&d.Timeline)
	w.Since = now
	d.push(w)
	d.serve(now)
	d.Mu.Unlock()
	err := w.Sleep(ctx, w)
	if err == nil {
		copy(plan, w.plan)
	}
	w.d().recycle(w)
	return err
}

func (w *classWaiter) d() *domain { return w.cs[0].d.Load() }

// A classWaiter is the queue.WaitQueue of its domain, for Wake.Sleep and
// Wake.Cancel.

func (w *classWaiter) LockNow() int64 {
	d := w.cs[0].lock()
	return max(d.Now(), d.seen)
}

func (w *classWaiter) Unlock() { w.d().Mu.Unlock() }

func (w *classWaiter) Fired(now int64) {
	d := w.d()
	if d.armed == w {
		d.armed = nil
	}
	d.changed(now)
}

func (w *classWaiter) Refund(now int64) {
	d := w.d()
	d.serve(now)
	for i, c := range w.cs {
		if w.costs[i] > 0 {
			giveBack(c, w.costs[i], 0, w.plan[i], now)
		}
	}
	d.changed(now)
}

func (w *classWaiter) Leave(now int64) {
	d := w.d()
	if d.armed == w {
		d.armed = nil
	}
	d.remove(w)
	d.changed(now)
}

func (w *classWaiter) Cancelled(int64) {} // classes have no observers

// Acquire waits until cost tokens can be granted to c, then takes them;
// see Class for where they come from and in which order waiters are
// served. It fails at once, spending nothing, with a *WaitError when ctx's
// deadline comes before the projected instant (its Ahead the calls queued
// on c, served first as a class is FIFO; calls of other classes may be
// served first too, by the borrowing order, and are not counted; classes
// have no pauses, so Paused and Cause stay zero); a waiter whose ctx is done
// leaves the queue, spends nothing and returns ctx.Err(). A call that
// must queue projects its instant by replaying the waiters already
// queued, so its cost grows with their number.
func (c *Class) Acquire(ctx context.Context, cost int64) error {
	if cost <= 0 {
		return throttle.ErrInvalidCost
	}
	costs, plan := [1]int64{cost}, [1]int{}
	return acquireClasses(ctx, c.self[:], costs[:], plan[:])
}

// WaitTime reports how long until c could be granted cost, given the
// waiters queued now and no other change: 0 if TryAcquire would succeed
// now. It fails with ErrCostExceedsCapacity when the hierarchy cannot
// cover the cost as it stands.
func (c *Class) WaitTime(cost int64) (time.Duration, error) {
	cs, costs := [1]*Class{c}, [1]int64{cost}
	return waitClasses(cs[:], costs[:])
}

func waitClasses(cs []*Class, costs []int64) (time.Duration, error) {
	d := cs[0].lock()
	defer d.Mu.Unlock()
	if err := checkClasses(cs, costs); err != nil {
		return 0, err
	}
	var t int64
	now := max(d.Now(), d.seen)
	d.peek(now, func(now int64) {
		ok := true
		for i, c := range cs {
			if costs[i] > 0 && (c.Head != nil || c.planNow(costs[i], now, d.queued == 0) < 0) {
				ok = false
			}
		}
		if ok {
			t = now
			return
		}
		w := d.waiter(cs, costs)
		w.virtual = true
		t = d.project(w, now)
		d.recycle(w)
	})
	if t == exact.Never {
		return 0, fmt.Errorf("%s: %w: no lender's spare will cover %d as the hierarchy stands", className(cs[0]), throttle.ErrCostExceedsCapacity, costs[0])
	}
	return time.Duration(t - now), nil
}
