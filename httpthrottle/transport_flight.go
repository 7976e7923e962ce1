package httpthrottle

import (
	"context"
	"errors"
	"math"
	"math/bits"
	"sync"
	"time"

	"github.com/throttlekit/throttle"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle/internal/headers"
)

// Which waits are certain.
//
// A request is refused before its deadline (a *WaitError, at once, nothing
// sent) only on a wait that is certain: one the server named (a pause), or
// exact arithmetic on settled state (a bucket of known rate and exact
// costs). A wait that rests on an estimate is not grounds for a refusal:
// with an llm.Config the costs queued and in flight are reservations, prompt plus
// max_tokens, that settle to what the calls use, most far less; on Auto's
// buckets the rate is Auto's share of a quota it is still learning, or a
// guess before the server said anything. Such a request waits its turn,
// its wait shrinking as the estimates settle, and fails with the context's
// error if its deadline comes first. What is certain of such a wait is
// its least: the pause in force, then the time the bucket's rate (the
// server's, for Auto; none before it is learned) takes to refill what the
// request needs beyond what the bucket holds and what its reservations in
// flight could give back, as if every one of them and every call queued
// ahead used nothing. A window reset already scheduled (windowResets)
// counts, from the reset on.

// flightBook counts, for each limit of a Gate, what the attempts of a
// Transport with an Accounting have reserved and not yet settled.
type flightBook struct {
	mu sync.Mutex
	m  map[limitRef]*flights
}

type flights struct {
	inFlight int64 // reserved by attempts not yet settled
}

// add books costs taken from g for an attempt about to be sent.
func (f *flightBook) add(g throttle.Gate, costs []int64) {
	f.mu.Lock()
	if f.m == nil {
		f.m = make(map[limitRef]*flights)
	}
	for i, c := range costs {
		if c == 0 {
			continue
		}
		r := limitRef{g, i}
		e := f.m[r]
		if e == nil {
			e = new(flights)
			f.m[r] = e
		}
		e.inFlight += c
	}
	f.mu.Unlock()
}

// settled removes an attempt booked with costs. A limit with nothing left
// in flight is forgotten.
func (f *flightBook) settled(g throttle.Gate, costs []int64) {
	f.mu.Lock()
	for i, c := range costs {
		r := limitRef{g, i}
		e := f.m[r]
		if e == nil || c == 0 {
			continue
		}
		e.inFlight -= c
		if e.inFlight <= 0 {
			delete(f.m, r)
		}
	}
	f.mu.Unlock()
}

// idle reports whether no attempt on g is in flight.
func (f *flightBook) idle(g *gate) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.m) == 0 {
		return true
	}
	for i := range g.limits {
		if e := f.m[limitRef{g.g, i}]; e != nil && e.inFlight > 0 {
			return false
		}
	}
	return true
}

// unsettled is what the attempts in flight on limit r reserved and have
// not settled: at most what they can give back.
func (f *flightBook) unsettled(r limitRef) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e := f.m[r]; e != nil && e.inFlight > 0 {
		return e.inFlight
	}
	return 0
}

// sureWait returns the refusal of costs on g, refused by the Gate for a
// wait past the context's deadline, when the part of the wait that is
// certain (see "Which waits are certain") passes the deadline too: the
// first such limit's, its name and that wait; or nil when the request may
// still be served in time, and queues. refused is the Gate's error,
// returned as it is when the decision cannot be made: without a deadline,
// or on a Gate that reports no Status (Meter).
func (t *Transport) sureWait(ctx context.Context, g *gate, costs []int64, clock interface{ Now() time.Time }, refused error) error {
	dl, ok := ctx.Deadline()
	if !ok || g.meter == nil || len(costs) != len(g.limits) {
		return refused
	}
	now := clock.Now()
	left := dl.Sub(now)
	var sts []throttle.LimitStatus
	one := make([]int64, len(costs))
	for i, c := range costs {
		if c == 0 {
			continue
		}
		r := limitRef{g.g, i}
		// The raise to come is read before the limit: a raise that is no
		// longer due has put its tokens in already (windowResets.at).
		var n int64
		var at time.Time
		var due bool
		if g.keyed {
			n, at, due = t.resets.due(r)
		}
		due = due && at.Before(dl)
		clear(one)
		one[i] = c
		w, err := g.g.WaitTime(one...)
		if err != nil {
			return refused
		}
		if w <= left {
			continue
		}
		if sts == nil {
			if sts = g.meter.Status(nil); len(sts) != len(costs) {
				return refused
			}
		}
		st := sts[i]
		var sure time.Duration
		if t.acct == nil && g.learn == nil {
			// Exact costs at a configured rate: the queue's projection is
			// certain, less what a reset will restore.
			sure = w
			if due {
				sure = max(w-refillTime(n, st.Rate.Tokens(), st.Rate.Period()), at.Sub(now))
			}
		} else {
			tokens, period := st.Rate.Tokens(), st.Rate.Period()
			if g.learn != nil {
				tokens, period = g.learn.ServerRate(i)
			}
			var pause time.Duration
			if !st.Paused.IsZero() {
				pause = max(st.Paused.Sub(now), 0)
			}
			var flying int64
			if g.keyed {
				flying = t.inFlight.unsettled(r)
			}
			need := c - satAdd(st.Remaining, flying)
			sure = pause
			if need > 0 && tokens > 0 && period > 0 {
				sure = satAddDur(pause, refillTime(need, tokens, period))
				if due {
					sure = min(sure, satAddDur(max(pause, at.Sub(now)), refillTime(need-n, tokens, period)))
				}
			}
		}
		if sure > left {
			e := &throttle.WaitError{Wait: sure, Limit: st.Name, Ahead: st.Waiting}
			if !st.Paused.IsZero() && st.Paused.After(now) {
				e.Paused, e.Cause = st.Paused, st.Cause
			}
			return e
		}
	}
	return nil
}

// refillTime is how long a rate of tokens per period takes to refill n
// tokens, rounded up, exact in integers; 0 for n <= 0, and the longest
// Duration when that does not fit one.
func refillTime(n, tokens int64, period time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	if tokens <= 0 || period <= 0 {
		return math.MaxInt64
	}
	hi, lo := bits.Mul64(uint64(n), uint64(period))
	if hi >= uint64(tokens) {
		return math.MaxInt64
	}
	d, r := bits.Div64(hi, lo, uint64(tokens))
	if r != 0 {
		d++
	}
	if d > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// satAddDur adds two non-negative durations, saturating.
func satAddDur(a, b time.Duration) time.Duration { return time.Duration(satAdd(int64(a), int64(b))) }

// takeHoping takes costs without the fail-fast of the deadline: the
// request queues, and leaves the queue when ctx ends.
func (x *exchange) takeHoping() (int64, error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(x.turnContext()))
	stop := context.AfterFunc(x.ctx, cancel)
	defer func() {
		stop()
		cancel()
	}()
	w, err := x.take(ctx)
	if err != nil && errors.Is(err, context.Canceled) {
		select {
		case <-x.ctx.Done():
			return 0, x.ctx.Err()
		default:
		}
	}
	return w, err
}

// windowResets schedules, for limits whose server quota ends a window,
// the return of the server's level at the window's end.
//
// A server that restores its quota at once at the end of a window (GitHub's
// x-ratelimit-reset, the X-RateLimit family) has its whole limit again
// then; a limit emptied by its "remaining: 0" would otherwise refill at
// its configured rate, one call every 0.72 s at 5,000 an hour, long after
// the server reset. The level comes back through the Gate's Settle (a
// Taker's): a Gate that is none gets its level back at its own rate.
type windowResets struct {
	mu      sync.Mutex
	pending map[limitRef]windowReset
}

// windowReset is a raise to come: n tokens at the instant at.
type windowReset struct {
	n  int64
	at time.Time
}

// at raises limit i of g by n tokens (never above its capacity) after d
// on clock, unless a raise is already pending for it.
func (w *windowResets) at(g *gate, i int, n int64, d time.Duration, clock clockwork.Clock) {
	if g.tk == nil || !g.keyed {
		return
	}
	r := limitRef{g.g, i}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.pending[r]; ok {
		return
	}
	if w.pending == nil {
		w.pending = make(map[limitRef]windowReset)
	}
	w.pending[r] = windowReset{n: n, at: clock.Now().Add(d)}
	back, none := make([]int64, len(g.limits)), make([]int64, len(g.limits))
	back[i] = n
	clock.AfterFunc(d, func() {
		// The tokens go in before the raise stops being pending, both under
		// the lock: a deadline decision (sureWait, which reads due before
		// the limit) sees the raise to come or its tokens, never neither.
		// Deleted first, a retry due at the same instant could find the
		// raise gone and the limit still empty, and give up.
		w.mu.Lock()
		defer w.mu.Unlock()
		g.tk.Settle(back, none)
		delete(w.pending, r)
	})
}

// due reports the raise to come for limit r, if any: a deadline decision
// counts it, as the calls queued behind an emptied limit will be served
// at the reset, not at the configured rate.
func (w *windowResets) due(r limitRef) (n int64, at time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wr, ok := w.pending[r]
	return wr.n, wr.at, ok
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

// observeRefused reports a refusal of the account to the Gate, if it is an
// Observer, as an EventRejected for each limit the request took from.
func observeRefused(g *gate, costs []int64, code string) {
	if g.obs == nil {
		return
	}
	for i, c := range costs {
		if c != 0 && i < len(g.limits) {
			g.obs.Observe(throttle.Event{Kind: throttle.EventRejected, Limit: g.limits[i].Name, Cost: c, Reason: code})
		}
	}
}

// satAdd adds two non-negative sums, saturating rather than wrapping.
func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return 1<<63 - 1
}
