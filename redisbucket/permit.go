package redisbucket

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/throttlekit/throttle"
)

// Permit records costs taken by an acquisition whose real cost is known
// only afterwards (an LLM call that reserves prompt tokens plus max_tokens).
// Settle or Cancel it once.
//
// A permit taken from Redis carries a random id that the server remembers
// for the permit TTL: retrying the acquisition or the settlement after a
// timeout (which may have been applied) never applies it twice. A permit
// granted by the failure policy settles against the local bucket under
// FailLocal and has nothing to correct under FailOpen.
type Permit struct {
	e     *engine
	id    string
	costs []int64
	mode  Mode
	local throttle.Permit // under FailLocal, the local buckets' permit
	held  *heldPermit     // taken from Redis: booked in the engine's estimates until settled

	mu   sync.Mutex
	done bool
}

func acquirePermit(ctx context.Context, e *engine, costs []int64) (*Permit, error) {
	id := newPermitID()
	d, err := e.acquireQueued(ctx, costs, id, func(ctx context.Context) (decision, error) {
		return e.decide(ctx, costs, id)
	})
	if err != nil {
		return nil, err
	}
	return e.newPermit(id, costs, d.mode, d.local), nil
}

// newPermit returns the Permit of an acquisition granted by mode, booked
// in the estimates when that is Redis.
func (e *engine) newPermit(id string, costs []int64, mode Mode, local throttle.Permit) *Permit {
	p := &Permit{e: e, id: id, costs: slices.Clone(costs), mode: mode, local: local}
	if mode == ModeRedis {
		e.est.hold(p, p.costs)
	}
	return p
}

// ID returns the permit's id, unique to this acquisition.
func (p *Permit) ID() string { return p.id }

// Costs returns the costs the permit took, one per limit.
func (p *Permit) Costs() []int64 { return slices.Clone(p.costs) }

// Mode says who granted the permit: ModeRedis, or a failure policy.
func (p *Permit) Mode() Mode { return p.mode }

// Settle corrects the costs to the actual use, one value per limit, with
// context.Background and the call timeout; see SettleContext.
func (p *Permit) Settle(actual ...int64) error {
	return p.SettleContext(context.Background(), actual...)
}

// SettleContext corrects the costs to the actual use, one value per limit.
// Where actual is below the cost the difference is refunded (never above
// capacity); where it is above, the extra is charged and the level may go
// negative, down to minus one capacity: a charge that would put a limit
// deeper in debt is capped there (which keeps the script's integers
// exact), and SettleContext returns an error that matches
// throttle.ErrCostExceedsCapacity and names the limit, the permit settled
// all the same (settling again fails with throttle.ErrSettled). Under
// FailLocal the bound is the local bucket's capacity. A retried settlement
// that Redis had already applied reports the cap only for a charge beyond
// two capacities, which no level can take. Settling twice, or after Cancel, fails with
// throttle.ErrSettled and changes nothing, as do a number of values other
// than one per limit (throttle.ErrInvalidCost) and a negative value
// (throttle.ErrInvalidCost). When Redis cannot be reached
// after a retry it fails with an error wrapping ErrUnavailable and the
// permit stays open, so the caller may try again.
func (p *Permit) SettleContext(ctx context.Context, actual ...int64) error {
	if len(actual) != len(p.costs) {
		return costCount(len(actual), len(p.costs))
	}
	for _, a := range actual {
		if a < 0 {
			return throttle.ErrInvalidCost
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return throttle.ErrSettled
	}
	// capped is the first limit whose charge stopped at the debt bound;
	// localCapped, under FailLocal, the local buckets' report of it.
	capped := -1
	var localCapped error
	switch p.mode {
	case ModeRedis:
		var err error
		if capped, err = p.settleRedis(ctx, actual); err != nil {
			return err
		}
	case ModeFailLocal:
		var err error
		if localCapped, err = p.settleLocal(actual); err != nil {
			return err
		}
	}
	p.done = true
	if p.held != nil {
		p.held.release()
	}
	if o := p.e.o.obs; o != nil {
		for i, a := range actual {
			o.Observe(Event{Event: throttle.Event{Kind: throttle.EventSettled, Limit: p.e.limits[i].name, Cost: a, Estimate: p.costs[i]}, Mode: p.mode})
		}
	}
	if capped >= 0 {
		return p.debtCapped(capped, actual[capped], p.e.limits[capped].capacity)
	}
	return localCapped
}

// settleRedis settles a permit Redis granted: one call (retried once
// when Redis is unavailable). It returns the first limit whose charge
// stopped at the debt bound, or -1.
func (p *Permit) settleRedis(ctx context.Context, actual []int64) (int, error) {
	capped := -1
	b := make([]int64, len(actual))
	for i, a := range actual {
		// Debt stops at one capacity: from a level of at most one
		// capacity, a charge of two reaches it, and more changes
		// nothing but the size of the numbers sent.
		b[i] = min(a, p.costs[i]+2*p.e.limits[i].capacity)
		if b[i] < a && capped < 0 {
			capped = i
		}
	}
	var err error
	var res result
	for range 2 {
		if res, err = p.e.call(ctx, modeSettle, p.id, p.costs, b, 1, p.e.o.permitTTL); err == nil || !unavailable(ctx, err) {
			break
		}
	}
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return -1, cerr
		}
		if unavailable(ctx, err) {
			return -1, fmt.Errorf("%w: settle permit %s: %w", ErrUnavailable, p.id, err)
		}
		return -1, err
	}
	if res.status == statusGranted && res.amount > 0 && int(res.amount) <= len(p.costs) {
		capped = int(res.amount) - 1
	}
	return capped, nil
}

// settleLocal settles a permit FailLocal granted: the difference goes to
// what Redis is charged when it answers again, and the local buckets
// settle, whose debt stops at their capacity as the shared one's does
// (the core reports the cap with the limit's name: capped).
func (p *Permit) settleLocal(actual []int64) (capped, err error) {
	d := make([]int64, len(actual))
	for i := range actual {
		d[i] = actual[i] - p.costs[i]
	}
	p.e.seen.spent(p.e.o.clock.Now(), d)
	if p.local == nil {
		return nil, nil
	}
	if err := p.local.Settle(actual...); errors.Is(err, throttle.ErrCostExceedsCapacity) {
		return err, nil
	} else if err != nil {
		return nil, err
	}
	return nil, nil
}

// debtCapped is the error of a settlement whose charge on limit i, for
// actual against the cost taken, stopped at a debt of one capacity c (the
// local bucket's under FailLocal).
func (p *Permit) debtCapped(i int, actual, c int64) error {
	err := fmt.Errorf("%w: permit settled at %d against %d taken: the charge would leave more than one capacity (%d) of debt and stops there",
		throttle.ErrCostExceedsCapacity, actual, p.costs[i], c)
	if n := p.e.limits[i].name; n != "" {
		err = fmt.Errorf("limit %q: %w", n, err)
	}
	return err
}

// Cancel returns every cost: the call was never made. See CancelContext.
func (p *Permit) Cancel() error { return p.CancelContext(context.Background()) }

// CancelContext returns every cost; it is SettleContext with zero actual use.
func (p *Permit) CancelContext(ctx context.Context) error {
	return p.SettleContext(ctx, make([]int64, len(p.costs))...)
}
