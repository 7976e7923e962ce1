package httpthrottle

import (
	"context"
	"errors"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/headers"
	"github.com/throttlekit/throttle/internal/ledger"
)

// Which waits are certain (docs/http-client.md, "Before a request is
// sent"): a request is refused before its deadline only on a wait the
// server named or exact arithmetic on settled state; on estimates (an
// Accounting's reservations, a rate Auto is still learning) only the
// least the wait can be counts: the pause, then the refill at the
// server's rate of what the request needs beyond the level and every
// unsettled reservation (those of calls still taking theirs included), a
// scheduled window reset counted from then on.

// sureWait returns the refusal of costs on g, which the Gate refused for a
// wait past ctx's deadline, when the certain part of the wait passes the
// deadline too; nil when the request may still be served in time. refused,
// the Gate's error, is returned as it is when the decision cannot be made.
// booked says that the caller's costs are booked in t.taking.
func (t *Transport) sureWait(ctx context.Context, g *gate, costs []int64, booked bool, clock interface{ Now() time.Time }, refused error) error {
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
		r := ledger.Ref{G: g.g, I: i}
		// The raise to come is read before the limit: a raise that is no
		// longer due has put its tokens in already (ledger.Resets.At).
		var n int64
		var at time.Time
		var due bool
		if g.keyed {
			n, at, due = t.resets.Due(r)
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
				sure = max(w-ledger.RefillTime(n, st.Rate.Tokens(), st.Rate.Period()), at.Sub(now))
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
			var flying, mine int64
			if booked {
				mine = c
			}
			if g.keyed {
				// And what others are taking: a take shows in the
				// levels before its caller books it in flight.
				flying = ledger.SatAdd(t.inFlight.Unsettled(r), t.taking.Unsettled(r)-mine)
			}
			need := c - ledger.SatAdd(st.Remaining, flying)
			sure = pause
			if need > 0 && tokens > 0 && period > 0 {
				sure = ledger.SatAdd(pause, ledger.RefillTime(need, tokens, period))
				if due {
					sure = min(sure, ledger.SatAdd(max(pause, at.Sub(now)), ledger.RefillTime(need-n, tokens, period)))
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
