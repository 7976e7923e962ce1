package budget

import (
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// Budget caps what calls spend over a Window: at most limit in each
// window, in whatever unit its costs are given in. It is a throttle.Gate
// with one limit, named after the budget, and a throttle.Meter and
// throttle.Pauser too. For gives the Budget of one key (a tenant, a
// model), with the same limit and window and a spend of its own.
type Budget struct {
	c   *common
	key string
}

// common is what the Budgets of every key of one New share.
type common struct {
	name   string
	limit  int64
	window Window
	store  Store
	clock  clockwork.Clock
	alerts []float64
	alert  func(Alert)
	obs    []throttle.Observer

	mu     sync.Mutex
	pauses map[string]time.Time // by key, until a server's pause ends
}

// Option configures a Budget.
type Option func(*common) error

// WithStore keeps the spend in s rather than in a store of the Budget's
// own in memory: a Store on disk or in Redis keeps it across restarts
// and shares it between processes. Budgets of different names may share
// one Store.
func WithStore(s Store) Option {
	return func(c *common) error {
		if s == nil {
			return fmt.Errorf("%w: WithStore(nil)", throttle.ErrInvalidOption)
		}
		c.store = s
		return nil
	}
}

// WithClock reads the time from clk, for tests on a fake clock.
func WithClock(clk clockwork.Clock) Option {
	return func(c *common) error {
		if clk == nil {
			return fmt.Errorf("%w: WithClock(nil)", throttle.ErrInvalidOption)
		}
		c.clock = clk
		return nil
	}
}

// OnThreshold calls f once a window for each fraction of the limit (0.8
// for 80%) that a call's reservation or settlement takes the spend to or
// past; by default at 0.8 and 1. Across processes sharing a Store, the
// one whose call crossed it is told. f is called from the goroutine of the
// call and must not block; it may be nil when only the observers of
// WithObserver are to hear of the fractions given.
func OnThreshold(f func(Alert), fractions ...float64) Option {
	return func(c *common) error {
		for _, x := range fractions {
			if !(x > 0) {
				return fmt.Errorf("%w: OnThreshold fraction %v, want one above 0", throttle.ErrInvalidOption, x)
			}
		}
		c.alert = f
		if len(fractions) > 0 {
			c.alerts = fractions
		}
		return nil
	}
}

// WithObserver tells each of obs, in turn, of every threshold OnThreshold
// names (0.8 and 1 by default) as a throttle.EventThreshold, once a window
// and by the call that crossed it, as OnThreshold's function is told: its
// Limit is the budget's name, followed by "/" and the key for a Budget of
// For. An Observer a program already has (slogthrottle's, otelthrottle's)
// then reports budgets beside its limits. Given again, it adds obs.
func WithObserver(obs ...throttle.Observer) Option {
	return func(c *common) error {
		for i, o := range obs {
			if o == nil {
				return fmt.Errorf("%w: WithObserver given a nil Observer (%d)", throttle.ErrInvalidOption, i)
			}
		}
		c.obs = append(c.obs, obs...)
		return nil
	}
}

// Alert tells that a budget's spend reached a fraction of its limit.
type Alert struct {
	Budget    string
	Key       string
	Threshold float64 // the fraction reached, as given to OnThreshold
	Spent     int64
	Limit     int64
	Resets    time.Time
}

// New returns a Budget named name that allows limit in each window w.
func New(name string, limit int64, w Window, opts ...Option) (*Budget, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: budget %q with limit %d, want one above 0", throttle.ErrInvalidOption, name, limit)
	}
	if w == nil {
		return nil, fmt.Errorf("%w: budget %q with no window", throttle.ErrInvalidOption, name)
	}
	c := &common{name: name, limit: limit, window: w, clock: clockwork.NewRealClock(),
		alerts: []float64{0.8, 1}, pauses: make(map[string]time.Time)}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.store == nil {
		c.store = NewMemory()
	}
	return &Budget{c: c}, nil
}

// For returns the Budget of key: the same limit, window and store, and a
// spend of its own, as a Keyed gives each key a Limiter of its own. It is
// cheap, so call it per request: httpthrottle's Picker can return
// b.For(llm.ModelKey(r)).
func (b *Budget) For(key string) *Budget { return &Budget{c: b.c, key: key} }

// Name returns the budget's name.
func (b *Budget) Name() string { return b.c.name }

// Key returns the key of this Budget, as given to For.
func (b *Budget) Key() string { return b.key }

// Clock returns the clock the Budget reads: the HTTP Transport reads
// pauses and deadlines on it.
func (b *Budget) Clock() clockwork.Clock { return b.c.clock }

// storeKey is the key of the spend in the store: the budget's name, and
// the key of For after a slash when there is one.
func (b *Budget) storeKey() string {
	if b.key == "" {
		return b.c.name
	}
	return b.c.name + "/" + b.key
}

// crossed tells the OnThreshold function and the observers of the
// thresholds a spend going from before to after reached.
func (b *Budget) crossed(before, after int64, resets time.Time) {
	if (b.c.alert == nil && len(b.c.obs) == 0) || after <= before {
		return
	}
	for _, f := range b.c.alerts {
		at := f * float64(b.c.limit)
		if float64(before) >= at || float64(after) < at {
			continue
		}
		if b.c.alert != nil {
			b.c.alert(Alert{Budget: b.c.name, Key: b.key, Threshold: f, Spent: after, Limit: b.c.limit, Resets: resets})
		}
		for _, o := range b.c.obs {
			o.Observe(throttle.Event{Kind: throttle.EventThreshold, Limit: b.storeKey(), Threshold: f,
				Cost: after, Estimate: b.c.limit, Until: resets})
		}
	}
}
