package htb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/errs"
	"github.com/throttlekit/throttle/internal/queue"
)

// Permit is the record of costs granted to classes by AcquirePermit
// or Limiter.Acquire, to settle once the real use is known, as
// Permit does for buckets. Settle or Cancel it once.
type Permit struct {
	cs      []*Class
	costs   []int64
	plan    []int
	settled atomic.Bool
}

// AcquirePermit is Acquire returning a Permit to settle later.
func (c *Class) AcquirePermit(ctx context.Context, cost int64) (throttle.Permit, error) {
	if cost <= 0 {
		return nil, throttle.ErrInvalidCost
	}
	p := &Permit{cs: c.self[:], costs: []int64{cost}, plan: []int{0}}
	if err := acquireClasses(ctx, p.cs, p.costs, p.plan); err != nil {
		return nil, err
	}
	return p, nil
}

// Costs returns the costs the permit took, one per class.
func (p *Permit) Costs() []int64 { return slices.Clone(p.costs) }

// Settle corrects the costs to the actual use, one value per class. A
// refund goes back to the buckets the grant came from (never above
// capacity); an overrun is charged to every bucket on the class's path,
// its own guarantee included, which may go into debt: the class repays it
// from its own refill before it is granted anything from its guarantee,
// and its borrowing stays bounded by its ceiling. Queued waiters are
// re-timed. Settling twice, or after Cancel, fails with ErrSettled.
func (p *Permit) Settle(actual ...int64) error {
	if err := errs.Settling(&p.settled, actual, len(p.cs), classCount); err != nil {
		return err
	}
	d := p.cs[0].lock()
	now := max(d.Now(), d.seen)
	d.serve(now)
	for i, c := range p.cs {
		if p.costs[i] > 0 || actual[i] > 0 {
			giveBack(c, p.costs[i], actual[i], p.plan[i], now)
		}
	}
	d.changed(now)
	d.Mu.Unlock()
	return nil
}

// Cancel returns every cost: the call was never made. It fails with
// ErrSettled if the permit was already settled or cancelled.
func (p *Permit) Cancel() error {
	return p.Settle(make([]int64, len(p.cs))...)
}

// Limiter spends on classes of several hierarchies at once, all or
// nothing: a team's class in the organisation's requests-per-minute
// hierarchy and its class in the tokens-per-minute one, say. Each class
// draws on its own hierarchy as Class describes.
type Limiter struct {
	cs []*Class
}

// Clock returns the clock the Limiter's classes measure time and sleep
// on (WithClock given to NewQuota; the real clock by default), so that the
// HTTP Transport reads a server's "wait" on the same time line; nil for
// the zero Limiter, which has no classes.
func (l *Limiter) Clock() clockwork.Clock {
	if len(l.cs) == 0 {
		return nil
	}
	return l.cs[0].domain().Timers
}

// classCount is the error for got costs given for want classes.
func classCount(got, want int) error { return errs.CostCount(got, want, "class") }

// errNoLimits is the error of a call with got costs on a zero Limiter.
func errNoLimits(got int) error { return errs.NoLimits(got, "htb.Limiter", "htb.NewLimiter") }

// NewLimiter returns a Limiter over classes, whose costs are
// given in this order; each must belong to a different hierarchy, and all
// must use the same clock. It joins their hierarchies' locks and time
// lines into one, which it can do only while nobody waits in them.
func NewLimiter(classes ...*Class) (*Limiter, error) {
	err := queue.CheckJoin("NewLimiter", "class", classes, func(_ int, o, c *Class) error {
		if o.tree == c.tree {
			return fmt.Errorf("htb: NewLimiter: %s and %s are in the same hierarchy", className(o), className(c))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := joinDomains(classes); err != nil {
		return nil, err
	}
	return &Limiter{cs: slices.Clone(classes)}, nil
}

// Classes returns the limiter's classes in cost order.
func (l *Limiter) Classes() []*Class { return slices.Clone(l.cs) }

// TryAcquire takes costs[i] for class i if every class can be granted
// its cost now; otherwise it takes nothing. It never blocks. A zero cost
// leaves that class out; at least one cost must be positive.
func (l *Limiter) TryAcquire(costs ...int64) (bool, error) {
	if len(l.cs) == 0 {
		return false, errNoLimits(len(costs))
	}
	var small [4]int
	plan := small[:0]
	if len(costs) > len(small) {
		plan = make([]int, len(costs))
	} else {
		plan = small[:len(costs)]
	}
	return l.tryAcquire(costs, plan)
}

// TryAcquirePermit is TryAcquire returning the Permit for the costs taken;
// p is nil when ok is false.
func (l *Limiter) TryAcquirePermit(costs ...int64) (p throttle.Permit, ok bool, err error) {
	if len(l.cs) == 0 {
		return nil, false, errNoLimits(len(costs))
	}
	plan := make([]int, len(costs))
	if ok, err = l.tryAcquire(costs, plan); !ok || err != nil {
		return nil, ok, err
	}
	return &Permit{cs: l.cs, costs: slices.Clone(costs), plan: plan}, true, nil
}

// Limits describes the limiter's classes in cost order: name, capacity
// and guaranteed rate.
func (l *Limiter) Limits() []throttle.Limit {
	ls := make([]throttle.Limit, len(l.cs))
	for i, c := range l.cs {
		ls[i] = throttle.Limit{Name: c.Name(), Capacity: c.Capacity(), Rate: c.Rate()}
	}
	return ls
}

// Status appends the state of every class, in cost order, to dst: its
// name, its guarantee's burst and rate, the whole tokens it could be
// granted now and the time until its guarantee is full.
func (l *Limiter) Status(dst []throttle.LimitStatus) []throttle.LimitStatus {
	for _, c := range l.cs {
		capacity := c.Capacity()
		reset, err := c.WaitTime(capacity)
		if err != nil {
			reset = -1
		}
		dst = append(dst, throttle.LimitStatus{Name: c.Name(), Capacity: capacity, Rate: c.Rate(), Remaining: max(int64(c.Tokens()), 0), Reset: reset, Level: c.Tokens()})
	}
	return dst
}

// tryAcquire is TryAcquire recording in plan, one per class, where each
// grant came from, for a Permit to give it back there.
func (l *Limiter) tryAcquire(costs []int64, plan []int) (bool, error) {
	d := l.cs[0].lock()
	defer d.Mu.Unlock()
	if err := checkClasses(l.cs, costs); errors.Is(err, errClosed) {
		return false, nil // a closed quota refuses, as a closed bucket does
	} else if err != nil {
		return false, err
	}
	now := max(d.Now(), d.seen)
	if d.queued > 0 {
		d.serve(now)
	}
	d.seen = now
	ok := d.tryAll(l.cs, costs, plan, now)
	if ok && d.queued > 0 {
		d.serve(now)
	}
	return ok, nil
}

// Acquire waits until every class can be granted its cost at the same
// instant, then takes them all and returns a Permit; it has the
// guarantees of Class.Acquire.
func (l *Limiter) Acquire(ctx context.Context, costs ...int64) (throttle.Permit, error) {
	if len(l.cs) == 0 {
		return nil, errNoLimits(len(costs))
	}
	p := &Permit{cs: l.cs, costs: slices.Clone(costs), plan: make([]int, len(l.cs))}
	if len(p.costs) != len(l.cs) {
		return nil, errs.CostCount(len(p.costs), len(l.cs), "bucket")
	}
	if err := acquireClasses(ctx, p.cs, p.costs, p.plan); err != nil {
		return nil, err
	}
	return p, nil
}

// WaitTime reports how long until TryAcquire(costs...) would succeed,
// given the waiters queued now and no other change.
func (l *Limiter) WaitTime(costs ...int64) (time.Duration, error) {
	if len(l.cs) == 0 {
		return 0, errNoLimits(len(costs))
	}
	return waitClasses(l.cs, costs)
}

// joinDomains puts the classes' hierarchies in one domain.
func joinDomains(classes []*Class) error {
	return queue.Join(classes, (*Class).domain, errors.New("htb: NewLimiter: classes use different clocks"),
		func(ds []*domain) error {
			for _, o := range ds {
				if o.queued > 0 {
					return errors.New("htb: NewLimiter: a hierarchy has waiters; join hierarchies before use")
				}
			}
			for _, o := range ds[1:] {
				ds[0].join(o)
			}
			return nil
		})
}

// join moves every class of o, which has no waiters, into d. Both are
// locked.
func (d *domain) join(o *domain) {
	delta := int64(o.Epoch.Sub(d.Epoch))
	for _, c := range o.classes {
		c.gl.Last += delta
		c.cl.Last += delta
		c.d.Store(d)
	}
	d.classes = append(d.classes, o.classes...)
	d.seen = max(d.seen, o.seen+delta)
	o.classes = nil
}
