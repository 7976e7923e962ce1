package htb

import (
	"errors"
	"fmt"
	"math/big"
	"math/bits"
	"sync/atomic"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/exact"
	"github.com/throttlekit/throttle/internal/option"
	"github.com/throttlekit/throttle/internal/queue"
)

// Class is one node of a hierarchical token bucket (HTB, after Linux
// traffic control): a quota shared by classes, each of which may have
// classes of its own, to any depth. NewQuota makes the root, the quota
// itself; NewClass adds a class under a parent.
//
// Every class has a guaranteed rate and burst (its guarantee bucket) and a
// ceiling (a second bucket, at least the guarantee and at most the
// parent's ceiling). The guarantees of a parent's children add up to at
// most the parent's, and the parent's bucket always holds at least what
// its children's buckets hold: the difference, exact to the fraction of a
// token, is the parent's spare, the tokens no child is guaranteed or
// their unused guarantee. A grant of n tokens to a class is taken from the
// lowest node on its path to the root whose spare covers n: the class
// itself when its own guarantee does (its own spare is its guarantee minus
// what its children hold), otherwise it borrows from its parent, or from
// a grandparent, and so on. Every grant is also taken from the guarantee
// buckets of the lender and every node above it, and from the ceiling of
// every class on the path, all or nothing: the root, the quota, is never
// exceeded, and no class goes past its ceiling (a class's ceiling caps its
// whole subtree, as in Linux). Because a borrower takes only spare, a
// class within its guarantee always finds its tokens in the guarantee
// buckets of its ancestors; only a ceiling set tight on an ancestor, or
// an overrun charged by Permit.Settle (quota used beyond what was
// granted, which the root has to repay like anyone), can hold it back.
//
// Borrowing order: borrowers that wait (Acquire) for the spare of the
// same lender are served by start-time fair queuing weighted by
// guarantees. Each child k of a lender keeps a tag; a borrow of n by a
// class below k starts at the later of k's tag and the lender's virtual
// time, which becomes that start, and k's tag becomes start + n / (k's
// guaranteed rate). The lender's spare is kept for the waiting borrower
// whose borrow would start first (the earliest arrival on a tie), even
// while that borrower is served from its own guarantee meanwhile; the
// others wait for it, unless its wait for the spare never ends. Borrowers
// that all saturate therefore share the spare in proportion to their
// guarantees: borrowers that stay queued through the whole interval, that
// is, for a borrower that runs out of waiters earns nothing for the time
// its queue is empty and the spare meanwhile goes to whoever asks. A
// class that keeps borrowing never loses its place, and a
// class that was idle earns no credit for the time it did not borrow. A
// grant from a class's own guarantee never waits for borrowers.
// TryAcquire borrows only when nobody waits in the hierarchy, so it never
// takes spare a waiter is owed; among callers that only use TryAcquire,
// spare goes to whoever asks first.
//
// Acquire, TryAcquire and WaitTime behave as on a Bucket, AcquirePermit as
// a Limiter's Acquire:
// exact integer arithmetic, FIFO within a class, a cancelled waiter spends
// nothing, a deadline too near fails at once (the wait is projected from
// the waiters queued now; a waiter that borrows can be served later than
// projected when guaranteed traffic of other classes comes meanwhile, and
// its context then ends it), and a Permit settles after the response.
//
// A Class is safe for concurrent use. All the classes of a hierarchy share
// one lock.
type Class struct {
	d      atomic.Pointer[domain]
	name   string
	parent *Class
	tree   *tree
	path   []*Class // the class, its parent, ..., the root
	kids   []*Class
	rate   throttle.Rate // guaranteed, as given
	gnum   uint64
	gden   uint64 // the guarantee, reduced, before scaling to the tree's denominator
	ceil   throttle.Rate
	self   [1]*Class

	// Guarded by the domain's mutex.
	g       exact.Shape // guarantee bucket, over the tree's common denominator
	gl      exact.Level
	c       exact.Shape // ceiling bucket; unused at the root
	cl      exact.Level
	tag     vtag // as a borrower from the parent
	vt      vtag // as a lender: the start tag of the latest borrow granted
	removed bool
	snap    classSnap // saved state, while a wait is projected

	// The class's waiters: head, last.
	queue.Fifo[centry, *centry]
}

// tree is what the guarantee buckets of one hierarchy share: a common
// denominator, so that a parent's level and the sum of its children's are
// compared exactly.
type tree struct {
	den     uint64
	classes []*Class
}

// maxTreeDen bounds the common denominator; a hierarchy whose periods
// need more is refused.
const maxTreeDen = 1 << 62

// Config configures a class made by NewClass.
type Config struct {
	// Name names the class in errors.
	Name string
	// Rate is the guaranteed rate; it must be positive. The guarantees of a
	// parent's children add up to at most the parent's.
	Rate throttle.Rate
	// Burst is the capacity of the guarantee bucket. Zero gives the class
	// its share of the parent's: parent burst x Rate / parent rate, at
	// least 1. The bursts of a parent's children add up to at most the
	// parent's.
	Burst int64
	// Ceil is the most the class takes, borrowing included: at least Rate
	// and at most the parent's ceiling. The zero Rate means the parent's
	// ceiling.
	Ceil throttle.Rate
	// CeilBurst is the capacity of the ceiling bucket: at least Burst and at
	// most the parent's ceiling burst. Zero means the parent's ceiling
	// burst.
	CeilBurst int64
}

// domain is what the classes acquired together share: one time line (the
// lock and the clocks, as a group's), one set of queues (a fifo per class,
// of its waiters' entries) and one armed timer. Its waiters sleep, wake,
// leave and are recycled as a group's do (wake, pool); only the order in
// which they are served is its own (schedule).
type domain struct {
	queue.Timeline
	classes []*Class
	queued  int            // waiters in the queues
	seen    int64          // latest instant served; projections start there
	armed   *classWaiter   // the waiter whose timer is set
	removed []*classWaiter // granted in a projection, to put back
	gen     uint64
	idle    queue.Pool[classWaiter]
	// onGrant, when set (tests), is told of every grant, under the lock.
	onGrant func(cs []*Class, costs []int64, at int64)
}

// NewQuota returns the root of a new hierarchy: a quota of capacity
// tokens refilling at rate, which starts full. Its classes are added with
// NewClass. The rate must be positive and finite. A capacity of 0 makes a
// closed quota, as New does a closed bucket: it admits nothing and has no
// classes (TryAcquire refuses, Acquire and WaitTime fail with ErrClosed,
// NewClass fails). WithName names it, WithClock sets its clock; classes
// report no events, so WithObserver, like WithMaxKeys, fails with
// ErrInvalidOption.
func NewQuota(capacity int64, rate throttle.Rate, opts ...throttle.Option) (*Class, error) {
	if rate.Tokens() <= 0 || rate == throttle.Inf {
		return nil, fmt.Errorf("htb: NewQuota: rate must be positive and finite, got %v", rate)
	}
	if capacity < 0 {
		return nil, fmt.Errorf("htb: NewQuota: capacity must not be negative, got %d", capacity)
	}
	s, err := shapeOf(rate, capacity)
	if err != nil {
		return nil, err
	}
	clock, name, err := option.ClockAndName("htb.NewQuota", ": classes report no events; observe the buckets of a Limiter instead", opts)
	if err != nil {
		return nil, err
	}
	d := &domain{}
	d.Start(clock)
	r := &Class{name: name, rate: rate, ceil: rate, gnum: s.Num, gden: s.Den, g: s}
	r.tree = &tree{den: s.Den, classes: []*Class{r}}
	r.self[0] = r
	r.path = []*Class{r}
	now := d.Now()
	r.gl = exact.Level{Tokens: capacity, Last: now}
	r.c, r.cl = s, exact.Level{Tokens: capacity, Last: now}
	d.seen = now
	d.classes = []*Class{r}
	r.d.Store(d)
	return r, nil
}

// NewClass adds a class under c. The class's guarantee bucket starts with
// as much of its burst as c's spare covers now, so that the classes
// already there keep theirs; its ceiling starts full.
func (c *Class) NewClass(cfg Config) (*Class, error) {
	d := c.lock()
	defer d.Mu.Unlock()
	if err := c.checkChild(cfg); err != nil {
		return nil, err
	}
	burst, err := c.childBurst(cfg)
	if err != nil {
		return nil, err
	}
	gs, den, nn, err := c.childGuarantee(cfg, burst)
	if err != nil {
		return nil, err
	}
	ceil, ceilBurst, cs, err := c.childCeiling(cfg, burst)
	if err != nil {
		return nil, err
	}
	for _, k := range c.tree.classes {
		if _, ok := scaled(k.gnum, k.gden, den); !ok {
			return nil, fmt.Errorf("htb: NewClass %q: rates too large for a common denominator", cfg.Name)
		}
	}

	now := max(d.Now(), d.seen)
	d.serve(now)
	if den != c.tree.den {
		c.tree.rescale(den)
	}
	k := &Class{name: cfg.Name, parent: c, tree: c.tree, rate: cfg.Rate, gnum: gs.Num, gden: gs.Den, ceil: ceil}
	k.self[0] = k
	k.g = exact.Shape{Cap: burst, Num: nn, Den: den, PerDen: c.g.PerDen}
	k.c = cs
	k.path = append([]*Class{k}, c.path...)
	// Start with what c can spare, whole tokens, so that every ancestor
	// still holds what its children hold.
	start := int64(0)
	if spare := c.spareTokens(now); spare > 0 {
		start = min(spare, burst)
	}
	k.gl = exact.Level{Tokens: start, Last: now}
	k.cl = exact.Level{Tokens: ceilBurst, Last: now}
	k.tag = c.vt
	c.kids = append(c.kids, k)
	c.tree.classes = append(c.tree.classes, k)
	d.classes = append(d.classes, k)
	k.d.Store(d)
	d.changed(now)
	return k, nil
}

// checkChild refuses a child under c, locked, that is removed or under a
// closed quota, and one whose guaranteed rate is not positive.
func (c *Class) checkChild(cfg Config) error {
	if c.removed {
		return fmt.Errorf("htb: NewClass: %s: %w", className(c), ErrClassRemoved)
	}
	if root := c.path[len(c.path)-1]; root.g.Cap == 0 {
		return fmt.Errorf("htb: NewClass %q: %s: %w", cfg.Name, className(root), errClosed)
	}
	if cfg.Rate.Tokens() <= 0 {
		return fmt.Errorf("htb: NewClass %q: guaranteed rate must be positive, got %v", cfg.Name, cfg.Rate)
	}
	if cfg.Rate.Period() <= 0 {
		return fmt.Errorf("htb: NewClass %q: rate period must be positive, got %v", cfg.Name, cfg.Rate.Period())
	}
	return nil
}

// childBurst returns the burst of a child of c, locked, with cfg: as
// given, or by default c's burst in the share of c's rate that cfg's is.
// The bursts of c's children may not add up to more than c's.
func (c *Class) childBurst(cfg Config) (int64, error) {
	sumBurst := int64(0)
	for _, k := range c.kids {
		sumBurst += k.g.Cap
	}
	burst := cfg.Burst
	if burst == 0 {
		burst = shareOf(c.g.Cap, cfg.Rate, c.rate)
	}
	if burst <= 0 {
		return 0, fmt.Errorf("htb: NewClass %q: burst must be positive, got %d", cfg.Name, burst)
	}
	if sumBurst+burst > c.g.Cap {
		return 0, fmt.Errorf("htb: NewClass %q: bursts of the children of %q would add up to %d, above its %d", cfg.Name, c.name, sumBurst+burst, c.g.Cap)
	}
	return burst, nil
}

// childGuarantee returns the shape of the guarantee of a child of c,
// locked, with cfg and burst, the tree's common denominator once the child
// is in, and the child's rate over it. The guarantees may not exceed the
// parent's: it compares sums over that denominator after admitting the
// new one.
func (c *Class) childGuarantee(cfg Config, burst int64) (gs exact.Shape, den, nn uint64, err error) {
	gs, err = shapeOf(cfg.Rate, burst)
	if err != nil {
		return gs, 0, 0, fmt.Errorf("htb: NewClass %q: %w", cfg.Name, err)
	}
	dhi, den := bits.Mul64(c.tree.den/exact.GCD(c.tree.den, gs.Den), gs.Den)
	if dhi != 0 || den > maxTreeDen {
		return gs, 0, 0, fmt.Errorf("htb: NewClass %q: the periods of the hierarchy have no common denominator below 2^62 ns", cfg.Name)
	}
	var sum uint64
	for _, k := range c.kids {
		n, ok := scaled(k.gnum, k.gden, den)
		if !ok {
			return gs, 0, 0, fmt.Errorf("htb: NewClass %q: rates too large for a common denominator", cfg.Name)
		}
		sum += n
	}
	nn, ok1 := scaled(gs.Num, gs.Den, den)
	pn, ok2 := scaled(c.gnum, c.gden, den)
	if !ok1 || !ok2 {
		return gs, 0, 0, fmt.Errorf("htb: NewClass %q: rates too large for a common denominator", cfg.Name)
	}
	if sum+nn > pn {
		return gs, 0, 0, fmt.Errorf("htb: NewClass %q: guarantees of the children of %q would add up to more than its %v", cfg.Name, c.name, c.rate)
	}
	return gs, den, nn, nil
}

// scaled returns num/dn as a numerator over den, a multiple of dn, and
// whether it is at most maxTreeDen.
func scaled(num, dn, den uint64) (uint64, bool) {
	hi, lo := bits.Mul64(num, den/dn)
	return lo, hi == 0 && lo <= maxTreeDen
}

// childCeiling returns the ceiling of a child of c, locked, with cfg and
// guaranteed burst: its rate and burst (c's where cfg leaves them out) and
// its shape. It is at least the guarantee and at most c's ceiling.
func (c *Class) childCeiling(cfg Config, burst int64) (ceil throttle.Rate, ceilBurst int64, cs exact.Shape, err error) {
	ceil, ceilBurst = cfg.Ceil, cfg.CeilBurst
	if ceil == (throttle.Rate{}) {
		ceil = c.ceil
	}
	if ceil == throttle.Inf {
		return ceil, 0, cs, fmt.Errorf("htb: NewClass %q: ceiling must be finite", cfg.Name)
	}
	if ceilBurst == 0 {
		ceilBurst = c.c.Cap
	}
	if rateLess(ceil, cfg.Rate) || rateLess(c.ceil, ceil) {
		return ceil, 0, cs, fmt.Errorf("htb: NewClass %q: ceiling %v must be at least the rate %v and at most the parent's ceiling %v", cfg.Name, ceil, cfg.Rate, c.ceil)
	}
	if ceilBurst < burst || ceilBurst > c.c.Cap {
		return ceil, 0, cs, fmt.Errorf("htb: NewClass %q: ceiling burst %d must be at least the burst %d and at most the parent's %d", cfg.Name, ceilBurst, burst, c.c.Cap)
	}
	cs, err = shapeOf(ceil, ceilBurst)
	if err != nil {
		return ceil, 0, cs, fmt.Errorf("htb: NewClass %q: %w", cfg.Name, err)
	}
	return ceil, ceilBurst, cs, nil
}

// Remove takes a class without children or waiters out of the hierarchy;
// what its guarantee bucket held becomes its parent's spare. Calls on a
// removed class fail with ErrClassRemoved, Remove itself included. The
// root cannot be removed.
func (c *Class) Remove() error {
	d := c.lock()
	defer d.Mu.Unlock()
	switch {
	case c.parent == nil:
		return errors.New("htb: Remove: the root of a hierarchy cannot be removed")
	case c.removed:
		return fmt.Errorf("htb: Remove: %s: %w", className(c), ErrClassRemoved)
	case len(c.kids) > 0:
		return fmt.Errorf("htb: Remove: class %q has classes of its own", c.name)
	case c.Head != nil:
		return fmt.Errorf("htb: Remove: class %q has waiters", c.name)
	}
	c.removeLocked(d, max(d.Now(), d.seen))
	return nil
}

func (c *Class) removeLocked(d *domain, now int64) {
	c.removed = true
	p := c.parent
	p.kids = deleteClass(p.kids, c)
	c.tree.classes = deleteClass(c.tree.classes, c)
	d.classes = deleteClass(d.classes, c)
	d.changed(now)
}

func deleteClass(cs []*Class, c *Class) []*Class {
	for i, k := range cs {
		if k == c {
			copy(cs[i:], cs[i+1:])
			cs[len(cs)-1] = nil
			return cs[:len(cs)-1]
		}
	}
	return cs
}

// rescale moves every guarantee bucket of the tree to the denominator
// den, a multiple of the current one: exactly, fractions included.
func (t *tree) rescale(den uint64) {
	f := den / t.den
	div := exact.NewDivider(den)
	for _, k := range t.classes {
		k.gl.Frac *= f
		k.g.Num = k.gnum * (den / k.gden)
		k.g.Den, k.g.PerDen = den, div
	}
	t.den = den
}

// shareOf returns capacity x r/parent, rounded down, at least 1.
func shareOf(capacity int64, r, parent throttle.Rate) int64 {
	n := new(big.Int).Mul(big.NewInt(capacity), big.NewInt(r.Tokens()))
	n.Mul(n, big.NewInt(int64(parent.Period())))
	m := new(big.Int).Mul(big.NewInt(int64(r.Period())), big.NewInt(parent.Tokens()))
	n.Quo(n, m)
	if !n.IsInt64() || n.Int64() > capacity {
		return capacity
	}
	return max(n.Int64(), 1)
}

// Name returns the class's name.
func (c *Class) Name() string { return c.name }

// Parent returns the class's parent, nil for the root.
func (c *Class) Parent() *Class { return c.parent }

// Rate returns the guaranteed rate (the quota's rate for the root).
func (c *Class) Rate() throttle.Rate { return c.rate }

// Ceil returns the ceiling rate.
func (c *Class) Ceil() throttle.Rate { return c.ceil }

// Capacity returns the capacity of the class's guarantee bucket (the
// quota's capacity for the root).
func (c *Class) Capacity() int64 {
	d := c.lock()
	defer d.Mu.Unlock()
	return c.g.Cap
}

// Tokens returns the level of the class's guarantee bucket right now,
// fractions included, counting the grants of waiters whose instant has
// come. It changes nothing: the hierarchy's levels move only together.
func (c *Class) Tokens() float64 {
	d := c.lock()
	defer d.Mu.Unlock()
	var v float64
	d.peek(max(d.Now(), d.seen), func(now int64) {
		l := c.gl
		c.g.Advance(&l, now)
		v = c.g.Value(&l)
	})
	return v
}

// lock locks the class's domain and returns it; classes move between
// domains when joined by NewLimiter.
func (c *Class) lock() *domain { return queue.Lock(&c.d) }

// domain returns the class's domain, which can change unless it is locked.
func (c *Class) domain() *domain { return c.d.Load() }

func className(c *Class) string {
	if c.name == "" {
		return "class"
	}
	return fmt.Sprintf("class %q", c.name)
}
