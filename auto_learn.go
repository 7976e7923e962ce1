package throttle

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/throttlekit/throttle/internal/headers"
)

// aimdLane is the bucket a quota that reports nothing is found on.
const aimdLane = "requests"

// The constants of the share rule; see AutoLimiter.
const (
	autoTau        = 1.0  // seconds over which a surplus above the reserve is spent
	autoShare0     = 0.05 // share taken before anything is measured
	autoMinTarget  = 0.05 // least target, as a fraction of the server's rate
	autoBurstTime  = 0.25 // seconds of its rate a learned bucket holds
	autoShareLeast = 0.2  // least fraction of the burst the first share assumes
	autoFair       = 0.01 // per second, as a fraction of the server's rate
	autoShareMax   = 0.2  // most of the server's rate the first share keeps of the rate before
)

// lane is one learned bucket of a quota and the state that tunes it.
type lane struct {
	name   string   // the bucket's
	policy string   // the server's name for the limit, once learned
	lim    *Limiter // the Keyed's Limiter for the bucket: keeps it held
	b      *Bucket

	// What the server said, once learned.
	learned bool
	limit   int64
	window  time.Duration
	exact   bool    // the burst is the limit (IETF, GitHub)
	ceil    float64 // the server's rate, tokens per second
	seen    int64   // the most the server was seen to hold: remaining + cost

	// The client's own rate and capacity, as last applied to b.
	rate     float64
	capacity int64
	maxCost  int64

	// The share rule's last measurement.
	measured bool
	lastR    int64
	lastAt   int64
	own      int64

	// Congestion control.
	slow       bool    // in slow start: no refusal yet
	wmax       float64 // the rate of the last refusal
	epochAt    int64
	epochOK    int64
	okSince    int64 // successes since the last refusal
	cutAt      int64
	cutEver    bool
	resumeAt   int64 // the end of the pause after the last cut
	quietUntil int64 // a refusal before this is the same congestion
	refusals   int64
}

// response learns from one response to a request sent under l with costs.
// The Transport calls it after heed, which has lowered the levels to the
// remaining counts and, on a refusal, paused l and emptied it.
func (q *autoQuota) response(req *http.Request, l *Limiter, costs []int64, status int, sig *headers.Signals) {
	a := q.a
	now := a.now()
	q.used.Store(now)
	throttled := throttledBy(status, sig)
	if throttled {
		a.stretchPause(l)
	}
	if res := githubResource(sig); res != "" && res != q.key.resource {
		// The response names the resource its quota belongs to: requests
		// of this path go to that quota from now on.
		base := q.key
		base.resource = ""
		k := base
		k.resource = res
		a.mu.Lock()
		a.quota(base, now).mapResource(firstSegment(req), res)
		target := a.quota(k, now)
		a.mu.Unlock()
		target.learnFrom(nil, nil, status, sig, now)
		return
	}
	q.learnFrom(l, costs, status, sig, now)
}

// learnFrom applies a response's signals to q's lanes.
func (q *autoQuota) learnFrom(l *Limiter, costs []int64, status int, sig *headers.Signals, now int64) {
	a := q.a
	throttled := throttledBy(status, sig)
	q.mu.Lock()
	defer q.mu.Unlock()
	if throttled {
		q.throttled++
	}
	if q.learn(sig) {
		q.rebuild()
	}
	for _, ln := range q.lanes {
		cost := int64(1)
		if l != nil {
			cost = 0
			if i := slices.Index(l.bs, ln.b); i >= 0 && i < len(costs) {
				cost = costs[i]
			}
		}
		if !ln.learned {
			ln.congestion(a, status < 400 && !throttled, throttled, cost, now)
		} else {
			if rem, ok := remainingFor(sig, ln.policy); ok {
				ln.heard(a, rem, cost, now)
			}
			if throttled {
				ln.refused(now)
			}
		}
		ln.apply(a)
	}
}

// learn makes or re-tunes the lanes for the limits sig reports, and
// reports whether the set of lanes changed. Once a limit on requests is
// known, the congestion-controlled bucket has done its job.
func (q *autoQuota) learn(sig *headers.Signals) bool {
	changed := false
	for i := range sig.Quotas {
		name, window, exact, ok := learnable(&sig.Quotas[i])
		if !ok {
			continue
		}
		ln := q.policy(name)
		if ln == nil && !tokenLane(name) {
			// The first limit on requests takes over the congestion-
			// controlled bucket, and with it the calls queued there,
			// which SetRate re-times.
			if c := q.lane(aimdLane); c != nil && !c.learned {
				ln = c
			}
		}
		if ln == nil {
			ln = q.newLane(q.freeLaneName(name))
			// Nothing is granted before the first share is known: a fresh
			// bucket holds a token, and every client of a shared quota
			// would spend it at once.
			ln.b.Drain(0)
			q.lanes = append(q.lanes, ln)
			changed = true
		}
		ln.policy = name
		ln.teach(sig.Quotas[i].Limit, window, exact)
	}
	return changed
}

// freeLaneName returns name, or when a lane of q already holds a bucket of
// that name for another of the server's limits, name with the least
// suffix "#2", "#3", … that no lane holds. Two header families on one
// response (an IETF policy "a" and OpenAI's "requests", say) are two
// limits: the first one on requests took over the congestion-controlled
// bucket, which keeps its name "requests", and the second must not be
// given that bucket again.
func (q *autoQuota) freeLaneName(name string) string {
	if q.lane(name) == nil {
		return name
	}
	for k := 2; ; k++ {
		if n := name + "#" + strconv.Itoa(k); q.lane(n) == nil {
			return n
		}
	}
}

// policy returns the lane that learns the server's limit named name, or
// nil.
func (q *autoQuota) policy(name string) *lane {
	for _, ln := range q.lanes {
		if ln.learned && ln.policy == name {
			return ln
		}
	}
	return nil
}

// learnable says which lane a reported quota teaches, over what window,
// and whether its limit is also its burst; ok is false for a quota that
// teaches nothing.
func learnable(qu *headers.Quota) (name string, window time.Duration, exact, ok bool) {
	if qu.Limit <= 0 {
		return "", 0, false, false
	}
	switch qu.Family {
	case headers.FamilyIETF:
		if qu.Unit != "" || qu.Window <= 0 {
			return "", 0, false, false
		}
		name = qu.Name
		if name == "" {
			name = aimdLane
		}
		return name, qu.Window, true, true
	case headers.FamilyOpenAI, headers.FamilyAnthropic:
		return qu.Name, time.Minute, false, true
	case headers.FamilyXRateLimit:
		switch qu.Resource {
		case "":
			return "", 0, false, false
		case "search", "code_search":
			return aimdLane, time.Minute, true, true
		}
		return aimdLane, time.Hour, true, true
	}
	return "", 0, false, false
}

// remainingFor returns the remaining count sig reports for the lane named
// name.
func remainingFor(sig *headers.Signals, name string) (int64, bool) {
	for i := range sig.Quotas {
		qu := &sig.Quotas[i]
		if qu.Remaining < 0 {
			continue
		}
		if n, _, _, ok := learnable(qu); ok && n == name {
			return qu.Remaining, true
		}
	}
	return 0, false
}

// githubResource returns the resource a response's X-RateLimit-Resource
// names, or "".
func githubResource(sig *headers.Signals) string {
	for i := range sig.Quotas {
		if qu := &sig.Quotas[i]; qu.Family == headers.FamilyXRateLimit {
			return qu.Resource
		}
	}
	return ""
}

func tokenLane(name string) bool {
	return name == "tokens" || name == "input-tokens" || name == "output-tokens"
}

// mapResource records that requests whose path starts with segment count
// on the resource name.
func (q *autoQuota) mapResource(segment, name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := range q.resources {
		if q.resources[i].segment == segment {
			q.resources[i].name = name
			return
		}
	}
	if len(q.resources) >= maxResources {
		q.resources = q.resources[1:]
	}
	q.resources = append(q.resources, resource{segment, name})
}

// teach sets what the server said about the lane's limit.
func (ln *lane) teach(limit int64, window time.Duration, exact bool) {
	if !ln.learned {
		ln.learned, ln.measured = true, false
	}
	ln.limit, ln.window, ln.exact = limit, window, exact
	ln.ceil = float64(limit) / window.Seconds()
}

// burst is the most the server's bucket holds, as far as is known.
func (ln *lane) burst() float64 {
	if ln.exact {
		return float64(ln.limit)
	}
	return min(max(ln.ceil, float64(ln.seen), 1), float64(ln.limit))
}

// interval is the least time between two measurements: enough for about
// ten tokens of the server's rate, within [50ms, 1s].
func (ln *lane) interval() int64 {
	d := 10 / ln.ceil
	return int64(min(max(d, 0.05), 1) * float64(time.Second))
}

// heard applies a remaining count rem, on a response that cost cost: the
// share rule of AutoLimiter.
func (ln *lane) heard(a *AutoLimiter, rem, cost int64, now int64) {
	ln.own += cost
	ln.maxCost = max(ln.maxCost, cost)
	ln.seen = max(ln.seen, rem+cost)
	burst := ln.burst()
	reserve := min(burst/2, ln.ceil)
	if !ln.measured {
		ln.measured = true
		// No lower than the rate the client already had, up to a fifth of
		// the server's, times the fraction left: calls queued on the
		// congestion-controlled bucket this lane takes over must not all
		// fail their deadlines at once.
		f := float64(rem) / burst
		ln.rate = max(ln.ceil*autoShare0*max(f, autoShareLeast), min(ln.rate, ln.ceil*autoShareMax)*f)
		ln.lastR, ln.lastAt, ln.own = rem, now, 0
	} else if dt := now - ln.lastAt; dt >= ln.interval() {
		secs := float64(dt) / float64(time.Second)
		own := float64(ln.own)
		used := max(ln.ceil*secs+float64(ln.lastR-rem), own)
		target := max(ln.ceil+(float64(rem)-reserve)/autoTau, autoMinTarget*ln.ceil)
		// The share of the target, plus the same small increase for
		// every client, which evens out the shares over time.
		next := own*target/used + autoFair*ln.ceil*secs
		next = min(max(next, ln.rate/2), ln.rate*2)
		if next < ln.rate {
			next = (ln.rate + next) / 2
		}
		ln.rate = next
		ln.lastR, ln.lastAt, ln.own = rem, now, 0
	}
	ln.rate = a.clamp(ln.rate, !tokenLane(ln.name))
	share := min(1, ln.rate/ln.ceil)
	ln.b.Drain(int64(float64(rem) * share))
}

// refused halves the rate of a learned lane, once per interval.
func (ln *lane) refused(now int64) {
	if ln.cutEver && now-ln.cutAt < ln.interval() {
		return
	}
	ln.cutEver, ln.cutAt = true, now
	ln.refusals++
	ln.rate /= 2
}

// clamp keeps a rate within the floor and, for requests, the maximum.
func (a *AutoLimiter) clamp(v float64, requests bool) float64 {
	if requests && a.cfg.max > 0 {
		v = min(v, a.cfg.max)
	}
	if !(v >= a.cfg.floor) { // NaN too
		v = a.cfg.floor
	}
	return v
}

// apply sets the lane's bucket to its rate, and a capacity of a quarter
// second of it (a tenth while congestion-controlled; for tokens, at least
// the client's share of the server's burst), at least the largest cost
// seen and at most the server's burst. Changes under 2% are
// not applied: SetRate re-times every waiter.
func (ln *lane) apply(a *AutoLimiter) {
	var c float64
	if ln.learned {
		c = max(math.Ceil(ln.rate*autoBurstTime), float64(ln.maxCost))
		if tokenLane(ln.name) {
			// A token cost is capped at the capacity (see LLM.Cost): a
			// capacity of a quarter second would cap every prompt. Hold
			// the client's share of the server's burst.
			c = max(c, math.Ceil(ln.burst()*min(1, ln.rate/ln.ceil)))
		}
		c = min(c, max(ln.burst(), float64(ln.maxCost)))
	} else {
		c = math.Ceil(ln.rate * autoCCBurst)
	}
	capacity := max(int64(c), 1)
	cur := perSecond(ln.b.Rate())
	rateChanged := math.Abs(ln.rate-cur) > 0.02*cur
	if !rateChanged && capacity == ln.capacity {
		return
	}
	r := ln.b.Rate()
	if rateChanged {
		r = rateOf(ln.rate)
		ln.b.SetRate(r)
	}
	if capacity != ln.capacity {
		ln.b.SetCapacity(capacity)
		ln.capacity = capacity
	}
	if o := a.cfg.obs; o != nil {
		o.Observe(Event{Kind: EventTuned, Limit: ln.name, Cost: capacity, Rate: r})
	}
}

// stretchPause lengthens the pause the Transport put on l after a refusal
// by a random part of up to a quarter of it, so that clients refused at
// the same instant do not resume at the same instant.
func (a *AutoLimiter) stretchPause(l *Limiter) {
	now := a.wall()
	var until time.Time
	for _, b := range l.bs {
		if u, ok := b.PausedUntil(); ok && u.After(until) {
			until = u
		}
	}
	if until.IsZero() {
		return
	}
	d := until.Sub(now)
	l.PauseUntil(until.Add(time.Duration(float64(d) * a.jitter(0, 0.25))))
}
