package throttle

import (
	"fmt"
	"slices"
	"time"
)

// Rate returns the bucket's current rate.
func (b *Bucket) Rate() Rate {
	g := b.lock()
	defer g.mu.Unlock()
	return b.rate
}

// SetRate changes the refill rate from now on. Tokens already accrued are
// kept, the fraction of a token too: exactly when the new rate's token
// time divides it, otherwise rounded down to the new rate's resolution (a
// rate of n tokens per period p counts a token in p/gcd(n, p) parts, p in
// nanoseconds). Queued waiters are re-timed at once.
func (b *Bucket) SetRate(r Rate) error {
	g := b.lock()
	defer g.mu.Unlock()
	s, err := r.shape(b.capacity)
	if err != nil {
		return err
	}
	now := g.now()
	g.serve(now)
	b.advance(&b.lvl, now)
	b.lvl.frac = rescale(b.lvl.frac, b.den, s.den)
	b.num, b.den, b.perDen, b.inf, b.rate = s.num, s.den, s.perDen, s.inf, r
	g.changed(now)
	return nil
}

// SetCapacity changes the capacity from now on. A level above the new
// capacity is cut down to it; queued waiters are re-timed, and those whose
// cost the new capacity can never cover fail with ErrCostExceedsCapacity,
// or with ErrClosed for a capacity of 0, which closes the bucket (see New).
// With the rate Inf the capacity bounds nothing.
func (b *Bucket) SetCapacity(capacity int64) error {
	if capacity < 0 {
		return fmt.Errorf("throttle: capacity must not be negative, got %d", capacity)
	}
	// The failed waiters are reported once unlocked, from copies taken
	// before they are finished: a finished waiter's Acquire call can return
	// at once, and its waiter be reused.
	type failure struct {
		bs    []*Bucket
		costs []int64
	}
	var failed []failure
	defer func() {
		for _, f := range failed {
			observe(f.bs, f.costs, EventRejected, 0)
		}
	}()
	g := b.lock()
	defer g.mu.Unlock()
	now := g.now()
	g.serve(now)
	b.advance(&b.lvl, now)
	b.capacity = capacity
	if b.lvl.tokens >= capacity {
		b.lvl.tokens, b.lvl.frac = capacity, 0
	}
	for w := g.head; w != nil; {
		next := w.next
		for i, wb := range w.bs {
			if err := b.over(w.costs[i]); wb == b && err != nil {
				failed = append(failed, failure{slices.Clone(w.bs), slices.Clone(w.costs)})
				g.remove(w)
				w.finish(limitErr(b, err, w.costs[i]))
				break
			}
		}
		w = next
	}
	g.changed(now)
	return nil
}

// PauseUntil grants nothing from the bucket before t, to Acquire or
// TryAcquire. The bucket does not refill while paused, so when the pause
// ends waiters are released at the configured rate from the level the
// bucket had, not in a burst banked during the pause. A later pause
// extends the current one; an earlier one never shortens it.
func (b *Bucket) PauseUntil(t time.Time) {
	g := b.lock()
	until := g.instant(t)
	if until <= b.paused {
		g.mu.Unlock()
		return
	}
	now := g.now()
	g.serve(now)
	b.advance(&b.lvl, now)
	b.paused = until
	b.lvl.last = max(b.lvl.last, until)
	g.changed(now)
	g.mu.Unlock()
	if b.obs != nil {
		b.obs.Observe(Event{Kind: EventPaused, Limit: b.name, Until: t})
	}
}

// PausedUntil returns the end of the current pause, and false if the bucket
// is not paused now.
func (b *Bucket) PausedUntil() (time.Time, bool) {
	g := b.lock()
	defer g.mu.Unlock()
	if b.paused <= g.now() {
		return time.Time{}, false
	}
	return g.epoch.Add(time.Duration(b.paused)), true
}

// Drain lowers the level to remaining if it is above: what a server
// reports as remaining is a hint that can only lower the level, never
// raise it. A negative remaining counts as zero.
func (b *Bucket) Drain(remaining int64) {
	remaining = max(remaining, 0)
	g := b.lock()
	defer g.mu.Unlock()
	now := g.now()
	g.serve(now)
	b.advance(&b.lvl, now)
	if b.lvl.tokens > remaining || (b.lvl.tokens == remaining && b.lvl.frac > 0) {
		b.lvl.tokens, b.lvl.frac = remaining, 0
		g.changed(now)
	}
}

// Refund returns n tokens to the bucket, never above capacity, for callers
// who track cost themselves. Queued waiters are re-timed.
func (b *Bucket) Refund(n int64) error {
	return b.adjust(n, true)
}

// Charge takes n more tokens from the bucket now, even if that leaves it in
// debt; the debt is repaid from refill before anything else is granted.
func (b *Bucket) Charge(n int64) error {
	return b.adjust(n, false)
}

func (b *Bucket) adjust(n int64, refund bool) error {
	if n < 0 {
		return ErrInvalidCost
	}
	g := b.lock()
	defer g.mu.Unlock()
	now := g.now()
	g.serve(now)
	b.advance(&b.lvl, now)
	if refund {
		b.give(&b.lvl, n)
	} else {
		b.lvl.take(n)
	}
	g.changed(now)
	return nil
}
