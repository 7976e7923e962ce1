package httpthrottle

import (
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/headers"
)

// heed applies what a response said to the Gate g, through what it can do
// (docs/http-client.md, "Reading every response"): remaining counts lower
// a Leveler, a Tuner learns each quota's size, and a refusal pauses a
// Pauser with every limit at the refused call's cost (or what the server
// reports left, if less), so that one call goes when the pause ends and
// the rest follow at the rate. A limit whose quota still holds the call
// keeps its level: the refusal was another limit's, and emptied, it would
// hold back even that call for a refill on top of the pause.
//
// refund, if not nil, runs after the pause begins (no call waiting for
// what it gives back is sent before the pause) and before the levels are
// set (it must not undo them). Callers skip heed for a success that
// carries no signal, most responses.
func (t *Transport) heed(req *http.Request, g *gate, costs []int64, status int, sig *headers.Signals, clock clockwork.Clock, refund func()) {
	t.countMalformed(sig)
	if g.tune != nil {
		// Before the pause: a limit at the server's quota is one the
		// server refills while it holds the client off (redisbucket's),
		// so that the fleet spends at the pause's end what it banked.
		t.tuneToReported(sig, g)
	}
	d, refused := t.refusal(req, status, sig, clock)
	var until time.Time // the refusal's pause ends then, one instant for both calls below
	if refused {
		until = clock.Now().Add(d)
		if g.pause != nil {
			// Paused before the refund, which serves the queue; the
			// levels are set below.
			g.pause.PauseUntil(until)
		}
	}
	if refund != nil {
		refund()
	}
	n := len(g.limits)
	if g.level != nil {
		t.lowerToReported(sig, n, g.name, g.level.Lower)
	}
	if !refused {
		return
	}
	levels := make([]int64, min(n, len(costs)))
	for i := range levels {
		v, holds := sig.RefusedLevel(costs[i], func(q *headers.Quota) bool { return t.quotaIndex(n, g.name, q) == i })
		if holds {
			v = -1
		}
		levels[i] = v
	}
	switch {
	case g.pause != nil:
		if g.obs != nil {
			cause := sig.Cause(status, req.URL.Hostname(), d)
			for i := range n {
				g.obs.Observe(throttle.Event{Kind: throttle.EventPaused, Limit: g.name(i), Until: until, Reason: cause})
			}
		}
		g.pause.PauseUntil(until, levels...)
	case g.level != nil:
		for i, v := range levels {
			if v >= 0 {
				g.level.Lower(i, v)
			}
		}
	}
	t.restoreAtReset(g, sig, d, clock)
}

// tuneToReported tells a Tuner the size of each quota the response reports
// with a known window.
func (t *Transport) tuneToReported(sig *headers.Signals, g *gate) {
	for i := range sig.Quotas {
		q := &sig.Quotas[i]
		if _, w, _, ok := q.Learnable(); ok {
			if j := t.quotaIndex(len(g.limits), g.name, q); j >= 0 {
				g.tune.Tune(j, q.Limit, w)
			}
		}
	}
}

// countMalformed counts the rate-limit fields of a response that could not
// be read (TransportStats.Malformed).
func (t *Transport) countMalformed(sig *headers.Signals) {
	if n := len(sig.Malformed); n > 0 {
		t.malformed.Add(int64(n))
	}
}

// lowerToReported lowers, with lower, each limit (of n, named by name) of
// which the response reports what remains: a rounded count is a hint
// within its rounding, so the most it can mean.
func (t *Transport) lowerToReported(sig *headers.Signals, n int, name func(i int) string, lower func(i int, remaining int64)) {
	for i := range sig.Quotas {
		q := &sig.Quotas[i]
		if q.Remaining < 0 {
			continue
		}
		if j := t.quotaIndex(n, name, q); j >= 0 {
			lower(j, q.MostRemaining())
		}
	}
}

// refusal reports whether a response to req says the client went over the
// quota, counting it, and for how long to pause: the server's own wait, or
// when it names none that is usable (none, zero, negative, past, garbage)
// the back-off of ledger.Refusals.
func (t *Transport) refusal(req *http.Request, status int, sig *headers.Signals, clock clockwork.Clock) (time.Duration, bool) {
	if !sig.Throttled(status) {
		return 0, false
	}
	t.throttled.Add(1)
	d, ok := sig.ServerWait(status)
	if !usableWait(d, ok) {
		d = t.pauses.Refused(req, clock.Now())
	}
	return d, true
}

// restoreAtReset gives the buckets whose server quota is restored at once
// at the end of a window (see headers.Quota.RefillsToFull), and which the
// pause d holds through that reset, the server's level at the reset: its
// limit, never above their capacity (see ledger.Resets).
func (t *Transport) restoreAtReset(g *gate, sig *headers.Signals, d time.Duration, clock clockwork.Clock) {
	for i := range sig.Quotas {
		q := &sig.Quotas[i]
		if q.Remaining != 0 || q.Limit <= 0 || q.Reset <= 0 || q.Reset > d || q.RefillsToFull() ||
			sig.Capped && q.Reset >= t.maxPause {
			continue
		}
		if j := t.quotaIndex(len(g.limits), g.name, q); j >= 0 && g.tk != nil && g.keyed {
			t.resets.At(g.g, g.tk, len(g.limits), j, q.Limit, d, clock)
		}
	}
}

// quotaIndex returns the index of the limit, of n named by name, that a
// reported quota describes: the limit of the same name; else, with
// WithAccounting, for a quota of a role ("requests", "tokens",
// "input-tokens", "output-tokens"), the first limit it Counts in; else,
// for a quota without a name, an IETF policy, or a "requests" quota, the
// limit named "requests", the first the Accounting counts requests in, or
// the only limit. An IETF policy counting another unit than
// requests (its qu, such as "content-bytes") matches only a limit named as
// the policy or as the unit: its remaining count says nothing about
// requests. It returns -1 when none matches.
func (t *Transport) quotaIndex(n int, name func(i int) string, q *headers.Quota) int {
	find := func(s string) int {
		for i := range n {
			if name(i) == s {
				return i
			}
		}
		return -1
	}
	if q.Unit != "" {
		if i := find(q.Name); i >= 0 && q.Name != "" {
			return i
		}
		return find(q.Unit)
	}
	if q.Name != "" {
		if i := find(q.Name); i >= 0 {
			return i
		}
		if i := t.counting(q.Name, n, name); i >= 0 {
			return i
		}
		if q.Family != headers.FamilyIETF && q.Name != "requests" {
			return -1
		}
	}
	if i := find("requests"); i >= 0 {
		return i
	}
	if i := t.counting("requests", n, name); i >= 0 {
		return i
	}
	if n == 1 {
		return 0
	}
	return -1
}

// counting returns the index of the first limit, of n named by name, that
// the Accounting says counts what a server's quota named quota counts, or
// -1.
func (t *Transport) counting(quota string, n int, name func(i int) string) int {
	if t.acct == nil {
		return -1
	}
	for i := range n {
		if t.acct.Counts(name(i), quota) {
			return i
		}
	}
	return -1
}
