package throttle

import (
	"fmt"
	"slices"
	"time"

	"github.com/throttlekit/throttle/internal/exact"
)

// SetRate changes the refill rate from now on. Tokens already accrued are
// kept, the fraction of a token too: exactly when the new rate's token
// time divides it, otherwise rounded down to the new rate's resolution (a
// rate of n tokens per period p counts a token in p/gcd(n, p) parts, p in
// nanoseconds). Queued waiters are re-timed at once.
func (b *Bucket) SetRate(r Rate) error {
	g := b.lock()
	defer g.Mu.Unlock()
	s, err := r.shape(b.Cap)
	if err != nil {
		return err
	}
	now := g.Now()
	g.serve(now)
	b.Advance(&b.lvl, now)
	b.lvl.Frac = exact.Rescale(b.lvl.Frac, b.Den, s.Den)
	b.Num, b.Den, b.PerDen, b.Inf, b.rate = s.Num, s.Den, s.PerDen, s.Inf, r
	g.changed(now)
	return nil
}

// SetCapacity changes the capacity from now on. A level above the new
// capacity is cut down to it; queued waiters are re-timed, and those whose
// cost the new capacity can never cover fail with ErrCostExceedsCapacity,
// or with errClosed for a capacity of 0, which closes the bucket (see New).
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
	defer g.Mu.Unlock()
	now := g.Now()
	g.serve(now)
	b.Advance(&b.lvl, now)
	b.Cap = capacity
	if b.lvl.Tokens >= capacity {
		b.lvl.Tokens, b.lvl.Frac = capacity, 0
	}
	for w := g.Head; w != nil; {
		next := w.Next
		for i, wb := range w.bs {
			if err := over(&b.shape, w.costs[i]); wb == b && err != nil {
				failed = append(failed, failure{slices.Clone(w.bs), slices.Clone(w.costs)})
				g.remove(w)
				w.Finish(limitErr(b, err, w.costs[i]))
				break
			}
		}
		w = next
	}
	g.changed(now)
	return nil
}

// pauseUntil grants nothing from the bucket before t, to Acquire or
// TryAcquire. The bucket does not refill while paused, so when the pause
// ends waiters are released at the configured rate from the level the
// bucket had, not in a burst banked during the pause. A later pause
// extends the current one; an earlier one never shortens it.
func (b *Bucket) pauseUntil(t time.Time) {
	g := b.lock()
	until := g.Instant(t)
	if until <= b.paused {
		g.Mu.Unlock()
		return
	}
	now := g.Now()
	g.serve(now)
	b.Advance(&b.lvl, now)
	b.paused = until
	cause := b.cause.begin(until)
	b.lvl.Last = max(b.lvl.Last, until)
	g.changed(now)
	g.Mu.Unlock()
	if b.obs != nil {
		b.obs.Observe(Event{Kind: EventPaused, Limit: b.name, Until: t, Reason: cause})
	}
}

// lower lowers the level to remaining if it is above: what a server
// reports as remaining is a hint that can only lower the level, never
// raise it. A negative remaining counts as zero.
func (b *Bucket) lower(remaining int64) { b.lowerTo(max(remaining, 0)) }

// lowerTo lowers the level to n if it is above, debt included: n may be
// negative, for reservations the client knows the server will count that
// the level no longer holds.
func (b *Bucket) lowerTo(remaining int64) {
	g := b.lock()
	defer g.Mu.Unlock()
	now := g.Now()
	g.serve(now)
	b.Advance(&b.lvl, now)
	if b.lvl.Tokens > remaining || (b.lvl.Tokens == remaining && b.lvl.Frac > 0) {
		b.lvl.Tokens, b.lvl.Frac = remaining, 0
		g.changed(now)
	}
}
