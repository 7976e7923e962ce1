package htb

// The event simulation of a hierarchy's queue: for each waiter at the
// head of its queues, the instants its costs are covered; whose turn it
// is; the grant and the timer of the next one; and the projections of a
// wait (WaitTime) and of a read (the getters) that leave everything as it
// was.

import (
	"math"
	"slices"

	"github.com/throttlekit/throttle/internal/exact"
)

// options fills w.opts with, for every class of w and every node of its
// path, the first instant at or after lo that node's spare covers the cost
// (and the ceilings and the guarantees above it do).
func (w *classWaiter) options(lo int64) {
	w.opts = w.opts[:0]
	for i, c := range w.cs {
		n := w.costs[i]
		if n == 0 {
			w.opts = append(w.opts, classOpt{t: lo})
			continue
		}
		base := lo
		p := c.path
		for _, m := range p[:len(p)-1] {
			base = max(base, m.c.ReadyAt(&m.cl, n))
		}
		above := make([]int64, len(p))
		t := int64(math.MinInt64)
		for j := len(p) - 1; j >= 0; j-- {
			above[j] = t
			t = max(t, p[j].g.ReadyAt(&p[j].gl, n))
		}
		for j, m := range p {
			other := max(base, above[j])
			free := m.spareReady(n, lo)
			w.opts = append(w.opts, classOpt{t: max(other, free), bound: free >= other && free != exact.Never})
		}
	}
}

// optsOf returns the options of class i of w.
func (w *classWaiter) optsOf(i int) []classOpt {
	k := 0
	for m := 0; m < i; m++ {
		if w.costs[m] == 0 {
			k++
		} else {
			k += len(w.cs[m].path)
		}
	}
	if w.costs[i] == 0 {
		return w.opts[k : k+1]
	}
	return w.opts[k : k+len(w.cs[i].path)]
}

// borrowTag is the start tag a borrow for c from path[j] would have: the
// later of the tag of c's ancestor below the lender and the lender's
// virtual time. Serving borrowers in order of start tags keeps the
// lender's virtual time at or below the tag of every waiting borrower, so
// a class that keeps borrowing never loses its place.
func borrowTag(c *Class, j int) vtag {
	l, k := c.path[j], c.path[j-1]
	return maxTag(k.tag, l.vt)
}

// owner is the borrower a lender's spare is kept for.
type owner struct {
	lender *Class
	w      *classWaiter
	tag    vtag
}

// serve grants, in order of their instants, every candidate whose instant
// has come, each at that instant, and arms the timer of the next one. It
// is an event simulation of the hierarchy from d.seen to now, so a timer
// that fires late loses nothing. It moves d.seen to now: the levels a
// grant touched are at its instant, and the next simulation must not start
// before them (a level advanced past its parent's makes the parent's spare
// look larger than it is), as one would after a refund by Settle.
func (d *domain) serve(now int64) {
	d.schedule(now, nil)
	if now > d.seen {
		d.seen = now
	}
}

// changed must follow any change to a level: it re-times the waiters.
func (d *domain) changed(now int64) {
	d.serve(now)
	if now > d.seen {
		d.seen = now
	}
}

// schedule runs serve's simulation; with target set (a projection) it
// stops once target is granted and returns its instant.
func (d *domain) schedule(now int64, target *classWaiter) int64 {
	cur := d.seen
	// On the stack for the usual few waiters and lenders: the helpers
	// return the slices they append to, which the compiler's own stack
	// buffer for an append does not survive.
	var candBuf [8]*classWaiter
	var ownerBuf [4]owner
	cands, owners := candBuf[:0], ownerBuf[:0]
	for d.queued > 0 {
		cands = d.candidates(cands[:0], cur)
		owners = spareOwners(owners[:0], cands)
		best := soonest(cands, owners)
		if best == nil || best.at > now {
			if target == nil {
				d.arm(best, now)
			}
			return exact.Never
		}
		t := best.at
		if !d.plan(best, t) {
			// A lender's spare fell between the instants of two of the
			// waiter's classes; it is looked at again on the next change.
			if target == nil {
				d.arm(nil, now)
			}
			return exact.Never
		}
		for i, c := range best.cs {
			if best.costs[i] > 0 {
				d.take(c, best.costs[i], best.plan[i], t)
			}
		}
		cur = max(cur, t)
		d.remove(best)
		if best == target {
			return t
		}
		if target != nil {
			d.removed = append(d.removed, best)
			continue
		}
		if d.onGrant != nil {
			d.onGrant(best.cs, best.costs, t)
		}
		if d.armed == best {
			d.armed = nil
		}
		best.Finish(nil)
	}
	if target == nil {
		d.arm(nil, now)
	}
	return exact.Never
}

// candidates appends to cands the waiters at the head of every queue they
// are in, each once (a new generation marks them), with their options
// from cur or the instant they queued, whichever is later.
func (d *domain) candidates(cands []*classWaiter, cur int64) []*classWaiter {
	d.gen++
	for _, c := range d.classes {
		if c.Head == nil {
			continue
		}
		w := c.Head.w
		if w.gen == d.gen || !w.heads() {
			continue
		}
		w.gen = d.gen
		w.options(max(cur, w.Since))
		cands = append(cands, w)
	}
	return cands
}

// spareOwners appends to owners, for each lender some candidate could
// borrow from, the candidate its spare is kept for: the waiting borrower
// with the smallest start tag among those who wait for its spare, even
// while that one is served from its own guarantee. It takes the spare when
// its own runs out, and only then does the next tag come up.
func spareOwners(owners []owner, cands []*classWaiter) []owner {
	for _, w := range cands {
		for i, c := range w.cs {
			if w.costs[i] == 0 {
				continue
			}
			os := w.optsOf(i)
			for best := 1; best < len(os); best++ {
				if !os[best].bound || os[best].t == exact.Never {
					continue
				}
				tg := borrowTag(c, best)
				lender := c.path[best]
				found := false
				for k := range owners {
					if owners[k].lender == lender {
						found = true
						if tg.less(owners[k].tag) || !owners[k].tag.less(tg) && w.Since < owners[k].w.Since {
							owners[k].w, owners[k].tag = w, tg
						}
					}
				}
				if !found {
					owners = append(owners, owner{lender, w, tg})
				}
			}
		}
	}
	return owners
}

// soonest sets every candidate's instant (w.at) and returns the one to
// grant first: the earliest, then one served from its own guarantees
// before one that borrows, then the one that queued first; nil if none
// can ever be granted.
func soonest(cands []*classWaiter, owners []owner) *classWaiter {
	var best *classWaiter
	bestOwn := false
	for _, w := range cands {
		at, own := w.instant(owners)
		w.at = at
		if at == exact.Never {
			continue
		}
		if best == nil || at < best.at || at == best.at && own && !bestOwn ||
			at == best.at && own == bestOwn && w.Since < best.Since {
			best, bestOwn = w, own
		}
	}
	return best
}

// instant returns the first instant every class of w can be granted its
// cost, skipping the spare of a lender kept for another waiter (owners),
// and whether each class is served from its own guarantee then. It marks
// the options skipped.
func (w *classWaiter) instant(owners []owner) (at int64, own bool) {
	at, own = math.MinInt64, true
	for i, c := range w.cs {
		os := w.optsOf(i)
		t := int64(exact.Never)
		pick := -1
		for j := range os {
			os[j].skip = false
			if j > 0 {
				for _, o := range owners {
					if o.lender == c.path[j] && o.w != w {
						os[j].skip = true
					}
				}
			}
			if !os[j].skip && os[j].t < t {
				t, pick = os[j].t, j
			}
		}
		at = max(at, t)
		own = own && pick <= 0
	}
	return at, own
}

// plan picks, for each class of w, the lowest node on its path whose
// spare covers the cost at t, skipping lenders kept for others.
func (d *domain) plan(w *classWaiter, t int64) bool {
	for i, c := range w.cs {
		w.plan[i] = 0
		if w.costs[i] == 0 {
			continue
		}
		os := w.optsOf(i)
		ok := false
		for j := range os {
			if os[j].skip || os[j].t > t {
				continue
			}
			if os[j].t == t || c.coversAt(w.costs[i], j, t) {
				w.plan[i], ok = j, true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// coversAt reports whether path[j]'s spare, the guarantees above it and
// the ceilings cover n at t, without changing a level.
func (c *Class) coversAt(n int64, j int, t int64) bool {
	p := c.path
	for _, m := range p[:len(p)-1] {
		l := m.cl
		m.c.Advance(&l, t)
		if l.Tokens < n {
			return false
		}
	}
	for _, m := range p[j+1:] {
		l := m.gl
		m.g.Advance(&l, t)
		if l.Tokens < n {
			return false
		}
	}
	return p[j].spareCoversAt(n, t)
}

// arm sets the timer of w, the next waiter to serve, for its instant, and
// stops the one set before if it was another's.
func (d *domain) arm(w *classWaiter, now int64) {
	if d.armed != nil && d.armed != w {
		d.armed.SetTimer(exact.Never, now)
		d.armed = nil
	}
	if w == nil || w.at == exact.Never {
		return
	}
	w.SetTimer(w.at, now)
	d.armed = w
}

// project returns the instant at which w, queued now, would be served
// given the waiters already queued, changing nothing.
func (d *domain) project(w *classWaiter, now int64) int64 {
	for _, c := range d.classes {
		c.snap = classSnap{gl: c.gl, cl: c.cl, tag: c.tag, vt: c.vt}
	}
	seen := d.seen
	d.seen = max(d.seen, now)
	d.removed = d.removed[:0]
	w.Since = now
	d.push(w)
	t := d.schedule(exact.Never-1, w)
	if t == exact.Never {
		d.remove(w)
	}
	for i := len(d.removed) - 1; i >= 0; i-- {
		d.pushFront(d.removed[i])
	}
	d.removed = d.removed[:0]
	for _, c := range d.classes {
		c.gl, c.cl, c.tag, c.vt = c.snap.gl, c.snap.cl, c.snap.tag, c.snap.vt
	}
	d.seen = seen
	return t
}

// peek calls read with the hierarchy as serve would leave it at now, the
// waiters due by then granted, and then puts everything back: a getter
// must not move a level alone (a parent's spare is computed from its
// level and its children's, advanced to the same instant) nor grant a
// waiter before its timer does.
func (d *domain) peek(now int64, read func(now int64)) {
	snaps := make([]classSnap, len(d.classes))
	for i, c := range d.classes {
		snaps[i] = classSnap{gl: c.gl, cl: c.cl, tag: c.tag, vt: c.vt}
	}
	seen := d.seen
	d.removed = d.removed[:0]
	if d.queued > 0 {
		d.schedule(now, &classWaiter{}) // a target never queued: serve all that is due
	}
	granted := slices.Clone(d.removed)
	d.removed = d.removed[:0]
	d.seen = max(seen, now)
	read(now)
	for i := len(granted) - 1; i >= 0; i-- {
		d.pushFront(granted[i])
	}
	for i, c := range d.classes {
		c.gl, c.cl, c.tag, c.vt = snaps[i].gl, snaps[i].cl, snaps[i].tag, snaps[i].vt
	}
	d.seen = seen
}

// classSnap is a class's state saved while a wait is projected.
type classSnap struct {
	gl, cl  exact.Level
	tag, vt vtag
}
