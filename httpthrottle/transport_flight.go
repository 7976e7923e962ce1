package httpthrottle

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/throttlekit/throttle"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle/internal/headers"
)

// What permits in flight will give back.
//
// With WithLLM a call reserves an estimate, the prompt plus max_tokens, and
// gives back what it did not use when it settles; most calls use far less
// output than their maximum. A deadline decision that ignored this would
// refuse, at once, a call that the refunds of the calls ahead of it will
// serve in time. So when a permit cannot be had before the context's
// deadline, the Transport asks what the permits in flight are likely to give
// back (flightBook.giveBack), and what a window reset already scheduled will
// restore (windowResets.due), and when that would bring the wait within the
// deadline it queues the request instead of refusing it; a queued request
// whose deadline comes first fails then with the context's error.

// flightBook counts, for each bucket, what the attempts of a Transport
// with WithLLM have reserved and not yet settled, and over the settled
// ones, what was reserved and what was used.
type flightBook struct {
	mu sync.Mutex
	m  map[*throttle.Bucket]*flights
}

type flights struct {
	inFlight int64 // reserved by attempts not yet settled
	reserved int64 // reserved by settled attempts
	used     int64 // what those attempts used
}

// add books costs taken from bs for an attempt about to be sent.
func (f *flightBook) add(bs []*throttle.Bucket, costs []int64) {
	f.mu.Lock()
	if f.m == nil {
		f.m = make(map[*throttle.Bucket]*flights)
	}
	for i, b := range bs {
		if costs[i] == 0 {
			continue
		}
		e := f.m[b]
		if e == nil {
			e = new(flights)
			f.m[b] = e
		}
		e.inFlight += costs[i]
	}
	f.mu.Unlock()
}

// settled moves an attempt booked with costs to the settled ones, which
// used actual. A bucket with nothing left in flight is forgotten, keeping
// its ratio only while it is in use.
func (f *flightBook) Settled(bs []*throttle.Bucket, costs, actual []int64) {
	f.mu.Lock()
	for i, b := range bs {
		e := f.m[b]
		if e == nil || costs[i] == 0 {
			continue
		}
		e.inFlight -= costs[i]
		e.reserved = satAdd(e.reserved, costs[i])
		e.used = satAdd(e.used, min(actual[i], costs[i]))
		if e.inFlight <= 0 {
			delete(f.m, b)
		}
	}
	f.mu.Unlock()
}

// giveBack is what the attempts in flight on b are likely to give back:
// what they reserved, times the share of what was reserved that settled
// attempts did not use (used / reserved over the attempts settled while
// some were in flight). Before any has settled, that share is taken to be
// all of it: nothing is known yet, the first settlement corrects it, and a
// request queued on that hope fails at its deadline at worst.
func (f *flightBook) giveBack(b *throttle.Bucket) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.m[b]
	if e == nil || e.inFlight <= 0 {
		return 0
	}
	if e.reserved == 0 {
		return e.inFlight
	}
	unused := float64(e.reserved-e.used) / float64(e.reserved)
	return int64(float64(e.inFlight) * unused)
}

// fitsLater reports whether costs on l, refused for a wait past the
// context's deadline, would be served before it once the permits in flight
// give back what they are likely to and the window resets pending restore
// their buckets: for each bucket, its wait (WaitTime, behind the queue and
// any pause) less the time its rate takes to refill those tokens, but not
// before the reset that brings them, against the time left.
func (t *Transport) fitsLater(ctx context.Context, l *throttle.Limiter, costs []int64, clock interface{ Now() time.Time }) bool {
	dl, ok := ctx.Deadline()
	if !ok {
		return false
	}
	now := clock.Now()
	left := dl.Sub(now)
	if left <= 0 {
		return false
	}
	for i, b := range core.Buckets(l) {
		if costs[i] == 0 {
			continue
		}
		// The raise to come is read before the bucket: a raise that is no
		// longer due has put its tokens in already (windowResets.at).
		n, at, due := t.resets.due(b)
		w, err := b.WaitTime(costs[i])
		if err != nil {
			return false
		}
		if w <= left {
			continue
		}
		back := t.inFlight.giveBack(b)
		var from time.Duration
		if due && at.Before(dl) {
			back = satAdd(back, n)
			from = at.Sub(now)
		}
		r := b.Status().Rate
		if back == 0 || r.Tokens() <= 0 {
			return false
		}
		// A decision, not a level: float64 is precise enough.
		gain := time.Duration(float64(back) * float64(r.Period()) / float64(r.Tokens()))
		if max(w-gain, from) > left {
			return false
		}
	}
	return true
}

// takeHoping takes costs without the fail-fast of the deadline: the
// request queues, and leaves the queue when ctx ends.
func (x *exchange) takeHoping() (int64, error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(x.ctx))
	stop := context.AfterFunc(x.ctx, cancel)
	defer func() {
		stop()
		cancel()
	}()
	w, err := core.Take(ctx, x.l, x.costs)
	if err != nil && errors.Is(err, context.Canceled) {
		select {
		case <-x.ctx.Done():
			return 0, x.ctx.Err()
		default:
		}
	}
	return w, err
}

// windowResets schedules, for buckets whose server quota ends a window,
// the return of the server's level at the window's end.
//
// A server that restores its quota at once at the end of a window (GitHub's
// x-ratelimit-reset, the X-RateLimit family) has its whole limit again
// then; a bucket emptied by its "remaining: 0" would otherwise refill at
// its configured rate, one call every 0.72 s at 5,000 an hour, long after
// the server reset.
type windowResets struct {
	mu      sync.Mutex
	pending map[*throttle.Bucket]windowReset
}

// windowReset is a raise to come: n tokens at the instant at.
type windowReset struct {
	n  int64
	at time.Time
}

// at raises b by n tokens (never above its capacity) after d on clock,
// unless a raise is already pending for b.
func (w *windowResets) at(b *throttle.Bucket, n int64, d time.Duration, clock clockwork.Clock) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.pending[b]; ok {
		return
	}
	if w.pending == nil {
		w.pending = make(map[*throttle.Bucket]windowReset)
	}
	w.pending[b] = windowReset{n: n, at: clock.Now().Add(d)}
	clock.AfterFunc(d, func() {
		// The tokens go in before the raise stops being pending, both under
		// the lock: a deadline decision (fitsLater, which reads due before
		// the bucket) sees the raise to come or its tokens, never neither.
		// Deleted first, a retry due at the same instant could find the
		// raise gone and the bucket still empty, and give up.
		w.mu.Lock()
		defer w.mu.Unlock()
		core.Give(b, n)
		delete(w.pending, b)
	})
}

// due reports the raise to come for b, if any: a deadline decision
// counts it, as the calls queued behind an emptied bucket will be served
// at the reset, not at the configured rate.
func (w *windowResets) due(b *throttle.Bucket) (n int64, at time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.pending[b]
	return r.n, r.at, ok
}

// secondaryMin is the least wait after GitHub's secondary limit when the
// response names none: GitHub asks to "wait for at least one minute", and
// longer, exponentially, if the limit is hit again.
const secondaryMin = time.Minute

// secondaryWait gives a GitHub secondary limit that named no wait (no
// retry-after, no remaining of 0 with its reset) the wait GitHub asks for:
// a minute, doubled for each secondary limit in a row since the last
// success, capped at the MaxPause (and then not retried: Capped).
func (t *Transport) secondaryWait(sig *headers.Signals) {
	if sig.HasRetryAfter {
		return
	}
	for _, q := range sig.Quotas {
		if q.Remaining == 0 && q.Reset >= 0 {
			return
		}
	}
	n := t.secondary.Add(1)
	// 16 doublings, 45 days, are past any MaxPause.
	d := secondaryMin << min(n-1, 16)
	if d > t.maxPause {
		d, sig.Capped = t.maxPause, true
	}
	sig.RetryAfter, sig.HasRetryAfter = d, true
}

// observeRefused reports a refusal of the account to the observers of the
// buckets the request took from.
func observeRefused(bs []*throttle.Bucket, costs []int64, code string) {
	for i, b := range bs {
		if costs[i] != 0 {
			core.Observe(b, throttle.Event{Kind: throttle.EventRejected, Limit: b.Status().Name, Cost: costs[i], Reason: code})
		}
	}
}
