package budget

import (
	"context"
	"fmt"
	"time"

	"github.com/throttlekit/throttle"
)

// Budget is a Gate, a Meter and a Pauser. It is not a Taker: a charge is
// in the window it was reserved in, which the Permit holds and a Settle
// without one would lose (a refund after midnight would credit the new
// day). Nor a Leveler or a Tuner: a server's count of what is left, or
// the size of its quota, is the server's rate limit, not the budget's.
var (
	_ throttle.Gate   = (*Budget)(nil)
	_ throttle.Meter  = (*Budget)(nil)
	_ throttle.Pauser = (*Budget)(nil)
)

// Acquire reserves cost in the window of now and returns the Permit that
// settles it. It waits only for a pause a server asked for (PauseUntil),
// and fails at once with a *WaitError (context.DeadlineExceeded) when the
// pause outlasts ctx's deadline. A window with no room for cost fails at
// once with a *SpentError: a budget is never waited for.
func (b *Budget) Acquire(ctx context.Context, costs ...int64) (throttle.Permit, error) {
	cost, err := b.cost(costs)
	if err != nil {
		return nil, err
	}
	if err := b.waitPause(ctx); err != nil {
		return nil, err
	}
	p, spent, err := b.reserve(ctx, cost)
	if p == nil && err == nil {
		_, end := b.c.window.Bounds(b.c.clock.Now())
		return nil, &SpentError{Budget: b.c.name, Key: b.key, Limit: b.c.limit, Spent: spent, Cost: cost, Resets: end}
	}
	return p, err
}

// TryAcquirePermit reserves cost if the window has room for it and no
// pause is in force; otherwise it reserves nothing and returns ok false.
func (b *Budget) TryAcquirePermit(costs ...int64) (throttle.Permit, bool, error) {
	cost, err := b.cost(costs)
	if err != nil {
		return nil, false, err
	}
	if !b.pausedUntil().IsZero() {
		return nil, false, nil
	}
	p, _, err := b.reserve(context.Background(), cost)
	if p == nil {
		return nil, false, err
	}
	return p, true, nil
}

// WaitTime reports how long until cost would be reserved: the rest of a
// pause in force, or, when the window has no room for it, the time until
// the window resets (what a refusal's Retry-After says).
func (b *Budget) WaitTime(costs ...int64) (time.Duration, error) {
	cost, err := b.cost(costs)
	if err != nil {
		return 0, err
	}
	now := b.c.clock.Now()
	start, end := b.c.window.Bounds(now)
	spent, err := b.c.store.Spent(context.Background(), b.storeKey(), start)
	if err != nil {
		return 0, err
	}
	if cost > b.c.limit-spent {
		return end.Sub(now), nil
	}
	if p := b.pausedUntil(); !p.IsZero() {
		return p.Sub(now), nil
	}
	return 0, nil
}

// Limits describes the budget's one limit: its name, its limit as the
// capacity, and as the rate the limit over the current window's length.
func (b *Budget) Limits() []throttle.Limit {
	start, end := b.c.window.Bounds(b.c.clock.Now())
	return []throttle.Limit{{Name: b.c.name, Capacity: b.c.limit, Rate: throttle.Per(b.c.limit, end.Sub(start))}}
}

// Status appends the budget's state now: what is left of the window and
// the time until it resets. A store that cannot be read reports the whole
// limit as spent.
func (b *Budget) Status(dst []throttle.LimitStatus) []throttle.LimitStatus {
	now := b.c.clock.Now()
	start, end := b.c.window.Bounds(now)
	spent, err := b.c.store.Spent(context.Background(), b.storeKey(), start)
	if err != nil {
		spent = b.c.limit
	}
	return append(dst, throttle.LimitStatus{
		Name: b.c.name, Capacity: b.c.limit, Rate: throttle.Per(b.c.limit, end.Sub(start)),
		Remaining: max(0, b.c.limit-spent), Reset: end.Sub(now), Paused: b.pausedUntil(),
		Level: float64(b.c.limit - spent),
	})
}

// PauseUntil holds this key's calls until t, as a server's 429 asks; a
// later pause extends an earlier one. levels are ignored: a server's
// count of what is left is not the budget's.
func (b *Budget) PauseUntil(t time.Time, _ ...int64) {
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	if t.After(b.c.pauses[b.key]) {
		b.c.pauses[b.key] = t
	}
}

// pausedUntil returns the end of the pause in force, or zero for none.
func (b *Budget) pausedUntil() time.Time {
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	p, ok := b.c.pauses[b.key]
	if ok && !p.After(b.c.clock.Now()) {
		delete(b.c.pauses, b.key)
		return time.Time{}
	}
	return p
}

// waitPause waits out a pause in force, failing at once when ctx's
// deadline comes first.
func (b *Budget) waitPause(ctx context.Context) error {
	for {
		p := b.pausedUntil()
		if p.IsZero() {
			return nil
		}
		wait := p.Sub(b.c.clock.Now())
		if d, ok := ctx.Deadline(); ok && d.Before(p) {
			return &throttle.WaitError{Wait: wait, Limit: b.c.name}
		}
		t := b.c.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.Chan():
		}
	}
}

// cost checks that costs is one positive cost no larger than the limit.
func (b *Budget) cost(costs []int64) (int64, error) {
	switch {
	case len(costs) != 1:
		return 0, fmt.Errorf("%w: budget %q has one limit and takes one cost, got %d", throttle.ErrInvalidCost, b.c.name, len(costs))
	case costs[0] <= 0:
		return 0, fmt.Errorf("%w: budget %q got cost %d, want one above 0", throttle.ErrInvalidCost, b.c.name, costs[0])
	case costs[0] > b.c.limit:
		return 0, fmt.Errorf("%w: budget %q allows %d a window, the call asks %d", throttle.ErrCostExceedsCapacity, b.c.name, b.c.limit, costs[0])
	}
	return costs[0], nil
}

// reserve reserves cost in the window of now; a nil Permit with a nil
// error says the window has no room for it, with what it has spent.
func (b *Budget) reserve(ctx context.Context, cost int64) (throttle.Permit, int64, error) {
	start, end := b.c.window.Bounds(b.c.clock.Now())
	key := b.storeKey()
	spent, ok, err := b.c.store.Reserve(ctx, key, start, cost, b.c.limit)
	if err != nil {
		return nil, 0, fmt.Errorf("budget %q: reserving %d: %w", b.c.name, cost, err)
	}
	if !ok {
		return nil, spent, nil
	}
	b.crossed(spent-cost, spent, end)
	return &permit{b: b, key: key, start: start, end: end, cost: cost}, spent, nil
}
