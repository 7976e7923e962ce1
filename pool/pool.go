package pool

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// Member is one Gate of a Pool and how the Pool ranks it.
type Member struct {
	// Name identifies the member: in Permits, in errors, to Quarantine and
	// to the routes of httpthrottle.WithRoutes. Unique within a Pool.
	Name string
	// Gate keeps the member's quota: an in-process throttle.Limiter, a
	// redisbucket.Limiter shared by a fleet, an Auto quota. Every member
	// has the same limits, by name and in the same order, since a call
	// gives one cost per limit whichever member serves it.
	Gate throttle.Gate
	// Tier orders members by preference: a call goes to a member of a
	// later tier only when no member of an earlier one covers it now.
	// Tier 0 is the first; a negative tier is invalid.
	Tier int
	// Weight is the member's share among the members of its tier: what
	// it has used of its limits counts divided by its weight when calls
	// are spread by headroom, and its calls so far count divided by its
	// weight among members of equal headroom (members that are no Meter).
	// 0 counts as 1.
	Weight int
}

// Pool is a throttle.Gate over several members. Its methods are safe for
// concurrent use.
type Pool struct {
	members []*member
	byName  map[string]*member
	limits  []throttle.Limit
	clock   clockwork.Clock
	// quarantine is how long a member exhausted without a known end stays
	// out (WithQuarantine).
	quarantine time.Duration

	mu sync.Mutex // guards the quarantines
}

// member is a Member and its quarantine.
type member struct {
	Member
	index  int
	weight float64
	meter  throttle.Meter
	// served counts the calls the member took, so that members of equal
	// headroom serve in turn, in proportion to their weights.
	served atomic.Uint64
	// until is the end of the member's quarantine, zero if none; read and
	// written under Pool.mu.
	until time.Time
}

// Option configures a Pool.
type Option func(*Pool) error

// WithClock sets the clock quarantines are timed on; by default the clock
// of the first member (its Clock method), else the real clock.
func WithClock(c clockwork.Clock) Option {
	return func(p *Pool) error {
		if c == nil {
			return fmt.Errorf("%w: pool.WithClock(nil)", throttle.ErrInvalidOption)
		}
		p.clock = c
		return nil
	}
}

// defaultQuarantine is the quarantine of a member exhausted without a
// known end, unless WithQuarantine sets another.
const defaultQuarantine = time.Hour

// WithQuarantine sets how long a member stays out when the answer that
// exhausted it (a billing refusal) says no end: DefaultQuarantine, which a
// caller such as httpthrottle's Transport reads. Default one hour; d > 0.
func WithQuarantine(d time.Duration) Option {
	return func(p *Pool) error {
		if d <= 0 {
			return fmt.Errorf("%w: pool.WithQuarantine(%v): the duration must be positive", throttle.ErrInvalidOption, d)
		}
		p.quarantine = d
		return nil
	}
}

// DefaultQuarantine is how long a member stays out when the answer that
// exhausted it says no end (WithQuarantine).
func (p *Pool) DefaultQuarantine() time.Duration { return p.quarantine }

// New returns a Pool of members. It fails, with an error matching
// throttle.ErrInvalidOption, for no member, a member without a name or a
// Gate, a name given twice, a negative tier or weight, or members whose
// limits differ in number or names.
func New(members []Member, opts ...Option) (*Pool, error) {
	if len(members) == 0 {
		return nil, fmt.Errorf("%w: pool.New: no member", throttle.ErrInvalidOption)
	}
	p := &Pool{byName: make(map[string]*member, len(members)), quarantine: defaultQuarantine}
	for i, m := range members {
		if err := p.add(i, m); err != nil {
			return nil, fmt.Errorf("%w: pool.New: member %d (%q): %v", throttle.ErrInvalidOption, i, m.Name, err)
		}
	}
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, err
		}
	}
	if p.clock == nil {
		p.clock = clockOf(members[0].Gate)
	}
	return p, nil
}

// add checks m and adds it as member i.
func (p *Pool) add(i int, m Member) error {
	switch {
	case m.Name == "":
		return fmt.Errorf("no name")
	case m.Gate == nil:
		return fmt.Errorf("no Gate")
	case p.byName[m.Name] != nil:
		return fmt.Errorf("name given twice")
	case m.Tier < 0:
		return fmt.Errorf("negative tier %d", m.Tier)
	case m.Weight < 0:
		return fmt.Errorf("negative weight %d", m.Weight)
	}
	limits := m.Gate.Limits()
	if i == 0 {
		p.limits = limits
	} else if err := sameLimits(p.limits, limits); err != nil {
		return err
	}
	x := &member{Member: m, index: i, weight: float64(max(m.Weight, 1))}
	x.meter, _ = m.Gate.(throttle.Meter)
	p.members = append(p.members, x)
	p.byName[m.Name] = x
	return nil
}

// sameLimits reports how got differs from want, the first member's
// limits, in number or names.
func sameLimits(want, got []throttle.Limit) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d limits, the first member has %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Name != want[i].Name {
			return fmt.Errorf("limit %d is %q, the first member's is %q", i, got[i].Name, want[i].Name)
		}
	}
	return nil
}

// clockOf returns g's clock (its Clock method), else the real clock.
func clockOf(g throttle.Gate) clockwork.Clock {
	if c, ok := g.(interface{ Clock() clockwork.Clock }); ok {
		if clk := c.Clock(); clk != nil {
			return clk
		}
	}
	return clockwork.NewRealClock()
}

// Clock returns the clock the Pool times quarantines on.
func (p *Pool) Clock() clockwork.Clock { return p.clock }

// Limits describes the limits every member has, in cost order, with the
// first member's capacities and rates.
func (p *Pool) Limits() []throttle.Limit { return p.limits }

// Members returns the members, in the order New was given them.
func (p *Pool) Members() []Member {
	out := make([]Member, len(p.members))
	for i, m := range p.members {
		out[i] = m.Member
	}
	return out
}

var _ throttle.Gate = (*Pool)(nil)
