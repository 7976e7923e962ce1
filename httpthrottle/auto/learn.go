package auto

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/throttlekit/throttle"

	"github.com/throttlekit/throttle/internal/headers"
	"github.com/throttlekit/throttle/internal/ledger"
)

// aimdLane is the bucket a quota that reports nothing is found on.
const aimdLane = "requests"

// The constants of the share rule; see Limiter.
const (
	autoTau        = 1.0  // seconds over which a surplus above the reserve is spent
	autoShare0     = 0.05 // share taken before anything is measured
	autoMinTarget  = 0.05 // least target, as a fraction of the server's rate
	autoBurstTime  = 0.25 // seconds of its rate a learned bucket holds
	autoShareLeast = 0.2  // least fraction of the burst the first share assumes
	autoFair       = 0.01 // per second, as a fraction of the server's rate
	autoShareMax   = 0.2  // most of the server's rate the first share keeps of the rate before
	// autoBurstSample is how many remaining counts of an IETF or GitHub
	// limit it takes to trust the most seen as the burst.
	autoBurstSample = 16
	// autoBurstTops is how many counts in a row at the most seen it takes
	// to trust that as the burst.
	autoBurstTops = 3
	// autoShareTokens is the first share of a token limit.
	autoShareTokens = 0.5
	// autoSpace is the most time, in seconds, by which a first count of an
	// IETF or GitHub limit delays the next call, in proportion to the part
	// of the limit it shows spent (see lane.heard).
	autoSpace = 0.5
)

// lane is one learned bucket of a quota and the state that tunes it.
type lane struct {
	name   string            // the bucket's
	policy string            // the server's name for the limit, once learned
	lim    *throttle.Limiter // the Keyed's Limiter for the bucket: keeps it held
	b      *throttle.Bucket

	// What the server said, once learned.
	learned bool
	limit   int64
	window  time.Duration
	exact   bool // the burst is the limit (IETF, GitHub)
	tokens  bool // the limit counts tokens
	// placeholder: a Quota's declared token limit not reported yet,
	// which holds nothing back (see declaredLane).
	placeholder bool
	counts      bool           // the server has reported what is left of it
	rem         int64          // what it last reported left
	nCounts     int64          // how many counts it reported
	tops        int64          // how many in a row were at the most seen
	heardAt     int64          // when a response last reported the limit
	cur         *headers.Quota // what the response being learned from reports of it
	grant       int64          // tokens the first share may spend at once, not yet given
	fleetN      int            // processes sharing the quota, as the fleet last said; 0 without a fleet
	fleet       *fleetCount    // under the fleet's congestion control: what was seen since the last sync
	ceil        float64        // the server's rate, tokens per second
	seen        int64          // the most the server was seen to hold: remaining + cost
	// A limit restored whole at the end of each window (GitHub's): its
	// counts are exact until the window's end, resetAt on a's time line.
	windowed bool
	resetAt  int64

	// The client's own rate and capacity, as last applied to b.
	rate     float64
	capacity int64
	maxCost  int64

	// The share rule's last measurement.
	measured bool
	lastR    int64
	lastLo   int64 // the least lastR may mean (see roundedCount)
	prevLo   int64 // the least the count before may mean
	lastAt   int64
	own      int64
	// The first share before the first count spaced the next call; 0 once
	// the next count is heard, or if it did not.
	spaced float64

	// Congestion control.
	slow       bool    // in slow start: no refusal yet
	pooled     bool    // the fleet's congestion control (Fleet), not one client's
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

// response learns from one response to a request sent under l, over the
// buckets bs, with costs.
// The Transport calls it after heed, which has lowered the levels to the
// remaining counts and, on a refusal, paused l and emptied it.
func (q *autoQuota) response(req *http.Request, l *throttle.Limiter, bs []*throttle.Bucket, costs []int64, status int, throttled bool, sig *headers.Signals, maxPause time.Duration) {
	a := q.a
	now := a.now()
	q.used.Store(now)
	q.maxPause.Store(int64(maxPause))
	if notAboutPace(status) {
		// A request refused for itself (too large) or a spent account
		// (billing): no wait cures it, and it says nothing of the quota's
		// pace. Learning from it would cut the rate of every good call.
		return
	}
	if throttled {
		q.stretchPause(l, maxPause)
	}
	if res := githubResource(sig); res != "" && res != q.key.resource && q.declared == nil {
		// The response names the resource its quota belongs to: requests
		// of this path go to that quota from now on.
		base := q.key
		base.resource = ""
		k := base
		k.resource = res
		a.mu.Lock()
		if _, known := a.quotas[k]; !known {
			a.roomForResource(base)
		}
		a.quota(base, now).mapResource(firstSegment(req), res)
		target := a.quota(k, now)
		a.mu.Unlock()
		target.maxPause.Store(int64(maxPause))
		target.learnFrom(nil, nil, status, throttled, sig, now)
		if q.key.resource == "" {
			// The calls queued on q before the response named their
			// resource are of that resource: left at the starting rate
			// they would crawl while the server has the resource's quota
			// for them.
			q.learnFrom(bs, costs, status, throttled, sig, now)
			if throttled {
				// The pause the server asked for is the resource's.
				if until := latestPause(l); !until.IsZero() {
					target.pauseUntil(until)
				}
			}
		}
		return
	}
	q.learnFrom(bs, costs, status, throttled, sig, now)
}

// autoMaxResources is the most GitHub resources remembered per host and
// credential, each a quota.
const autoMaxResources = 16

// roomForResource forgets the resource quota of base used least recently
// if base has autoMaxResources of them, to make room for another. a.mu is
// held.
func (a *Limiter) roomForResource(base quotaKey) {
	n, at := 0, -1
	var oldest int64
	for i, q := range a.order {
		k := q.key
		if k.resource == "" || k.name != base.name || k.cred != base.cred {
			continue
		}
		n++
		if u := q.used.Load(); at < 0 || u < oldest {
			at, oldest = i, u
		}
	}
	if n >= autoMaxResources {
		a.forget(at)
	}
}

// notAboutPace reports whether a response's status says the request was
// refused for what it is, not for the client's pace: 413, which the
// Transport reports for a 429 about the request itself (too large, or an
// account out of credit: OpenAI's insufficient_quota), and 402.
func notAboutPace(status int) bool {
	return status == http.StatusRequestEntityTooLarge || status == http.StatusPaymentRequired
}

// learnFrom applies a response's signals to q's lanes.
func (q *autoQuota) learnFrom(bs []*throttle.Bucket, costs []int64, status int, throttled bool, sig *headers.Signals, now int64) {
	a := q.a
	q.mu.Lock()
	defer q.mu.Unlock()
	if throttled {
		q.throttled++
	}
	changed, fresh := q.learn(sig, now)
	if changed {
		q.rebuild()
	}
	for _, ln := range q.lanes {
		if ln.placeholder {
			continue // holds nothing back until reported
		}
		cost := int64(1)
		if bs != nil {
			cost = 0
			if i := slices.Index(bs, ln.b); i >= 0 && i < len(costs) {
				cost = costs[i]
			}
		}
		switch {
		case !ln.learned:
			ln.congestion(a, status < 400 && !throttled, throttled, cost, now)
		case ln.cur != nil && ln.cur.Remaining >= 0 && q.windowOf(ln.cur):
			// The server's own count until its window's end: a refusal
			// under it is the server's pause (a secondary limit while
			// the count holds, or the count spent until the reset), not
			// a sign that the client's share is too large.
			q.windowCount(ln, ln.cur, cost, now)
		case ln.cur != nil && ln.cur.Remaining >= 0:
			ln.heard(a, countOf(ln.cur), cost, now)
			if throttled {
				ln.refused(a, now)
			}
		case ln.counts:
			// A limit whose counts this response lacks.
			if throttled && !ln.windowed {
				ln.refused(a, now)
			}
		case ln.cur != nil || throttled:
			// A limit the server names without saying what is left of it:
			// its rate is the ceiling, and congestion control finds the
			// client's share below it.
			ln.congestion(a, status < 400 && !throttled, throttled, cost, now)
		}
		ln.apply(a)
	}
	if a.cfg.fleet != nil {
		// A limit new to the quota goes to the fleet at once.
		q.share(now, throttled || fresh)
	}
}

// The bounds of what one quota learns.
const (
	// autoMaxLimits is the most limits a quota learns. A server that
	// names a new policy on every response does not grow the quota: the
	// limit reported least recently is forgotten to make room.
	autoMaxLimits = 64
	// autoMaxPolicy is the most bytes of a policy name kept.
	autoMaxPolicy = 64
)

// learn makes or re-tunes the lanes for the limits sig reports, marks each
// lane with the quota that reports it on this response (lane.cur), and
// reports whether the set of lanes changed, and whether a limit not known
// before was learned.
//
// A limit is its name and its window: an IETF policy "requests" over 60
// seconds and OpenAI's per-minute "requests" are one limit, learned once.
// When two families report one limit on a response, the first in the
// order of [headers.Family] teaches it (IETF, then GitHub's X-RateLimit,
// then OpenAI's, then Anthropic's): the IETF fields state the burst
// exactly. Once a limit on requests is known, the congestion-controlled
// bucket has done its job: the first such limit takes it over.
func (q *autoQuota) learn(sig *headers.Signals, now int64) (changed, fresh bool) {
	for _, ln := range q.lanes {
		ln.cur = nil
	}
	for i := range sig.Quotas {
		qu := &sig.Quotas[i]
		name, window, exact, ok := learnable(qu)
		if !ok {
			continue
		}
		tokens := tokenQuota(qu)
		ln := q.policy(name, window, tokens)
		if ln != nil && ln.cur != nil {
			continue // taught by a family of higher precedence
		}
		if ln == nil {
			var made bool
			ln, made = q.limitLane(name, tokens, now)
			if ln == nil {
				continue // not among a Quota's limits
			}
			changed = changed || made
		}
		ln.policy, ln.cur, ln.heardAt = name, qu, now
		fresh = fresh || !ln.learned
		ln.teach(qu.Limit, window, exact)
	}
	return changed, fresh
}

// limitLane returns a lane for a limit not learned yet: the congestion-
// controlled bucket for the first limit on requests, which takes with it
// the calls queued there (SetRate re-times them), or a new lane, made
// after forgetting the limit reported least recently if the quota holds
// autoMaxLimits. made reports a new lane. For a Quota, whose lanes are
// fixed, a limit other than the first on requests teaches the declared
// lane of its name, or none (nil; see declaredLane). q.mu is held.
func (q *autoQuota) limitLane(name string, tokens bool, now int64) (ln *lane, made bool) {
	if !tokens {
		if c := q.lane(aimdLane); c != nil && !c.learned {
			c.policy, c.heardAt = name, now
			return c, false
		}
	}
	if q.declared != nil {
		return q.declaredLane(name, tokens, now), false
	}
	if q.learnedLanes() >= autoMaxLimits {
		q.evictLane()
	}
	base := aimdLane
	if tokens {
		base = name
	}
	ln = q.newLane(q.freeLaneName(base))
	ln.tokens, ln.policy, ln.heardAt = tokens, name, now
	// Nothing is granted before the first share is known: a fresh bucket
	// holds a token, and every client of a shared quota would spend it at
	// once.
	ln.lim.Lower(0, 0)
	q.lanes = append(q.lanes, ln)
	return ln, true
}

// learnedLanes counts q's lanes taught by the server.
func (q *autoQuota) learnedLanes() int {
	n := 0
	for _, ln := range q.lanes {
		if ln.learned {
			n++
		}
	}
	return n
}

// evictLane forgets the learned limit reported least recently (of two
// reported at the same instant, the one learned last). Calls queued on its
// bucket keep it until they are served.
func (q *autoQuota) evictLane() {
	at := -1
	for i, ln := range q.lanes {
		if ln.learned && (at < 0 || ln.heardAt <= q.lanes[at].heardAt) {
			at = i
		}
	}
	if at >= 0 {
		q.lanes = slices.Delete(q.lanes, at, at+1)
	}
}

// freeLaneName returns name, or when a lane of q already holds a bucket of
// that name for another of the server's limits, name with the least
// suffix "#2", "#3", … that no lane holds. Bucket names are thus at most
// autoMaxLimits+1 values for each of "requests", "tokens", "input-tokens"
// and "output-tokens", whatever the server names its policies: they are
// the values of Event.Limit, which observers (otelthrottle) turn into
// attribute values. The server's own name is the lane's policy.
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

// policy returns the lane that learns the server's limit named name over
// window, or nil.
func (q *autoQuota) policy(name string, window time.Duration, tokens bool) *lane {
	for _, ln := range q.lanes {
		if ln.learned && ln.policy == name && ln.window == window && ln.tokens == tokens {
			return ln
		}
	}
	return nil
}

// learnable says which limit a reported quota teaches (its name, cut to
// autoMaxPolicy bytes), over what window, and whether its limit is also
// its burst; ok is false for a quota that teaches nothing.
func learnable(qu *headers.Quota) (name string, window time.Duration, exact, ok bool) {
	name, window, exact, ok = qu.Learnable()
	if len(name) > autoMaxPolicy {
		name = strings.ToValidUTF8(name[:autoMaxPolicy], "")
	}
	return name, window, exact, ok
}

// tokenQuota reports whether a quota counts tokens (OpenAI's and
// Anthropic's token limits).
func tokenQuota(qu *headers.Quota) bool {
	return (qu.Family == headers.FamilyOpenAI || qu.Family == headers.FamilyAnthropic) && tokenLane(qu.Name)
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

// burst is the most the server's bucket holds, as far as is known: the
// most it was seen to hold (remaining plus the cost of the response that
// reported it), since a server's burst is often shorter than its window
// (GCRA servers, Handler). For an IETF or GitHub limit, whose limit
// is its burst as far as the server says, that takes autoBurstSample
// counts, or autoBurstTops in a row at the most seen (a first count may
// come from a quota others have half spent; a bucket that keeps showing
// the same top is full at it), and is at most the limit; before, the
// limit. For the per-minute vendors, one
// second of the rate before anything was seen.
func (ln *lane) burst() float64 {
	if ln.seen > 0 && (!ln.exact || ln.nCounts >= autoBurstSample || ln.tops >= autoBurstTops) {
		return min(float64(ln.seen), float64(ln.limit))
	}
	if ln.exact {
		return float64(ln.limit)
	}
	return min(max(ln.ceil, 1), float64(ln.limit))
}

// interval is the least time between two measurements: enough for about
// ten tokens of the server's rate, within [50ms, 1s].
func (ln *lane) interval() int64 {
	d := 10 / ln.ceil
	return int64(min(max(d, 0.05), 1) * float64(time.Second))
}

// heard applies a remaining count c, on a response that cost cost: the
// share rule of Limiter. A rounded count teaches what its range proves
// (see roundedCount): the consumption measured is the least the two counts
// allow, the target steers to the reserve as near as the range tells, and
// the level is lowered to the client's share of the most the count may
// mean.
func (ln *lane) heard(a *Limiter, c roundedCount, cost int64, now int64) {
	rem := c.rem
	ln.own += cost
	ln.maxCost = max(ln.maxCost, cost)
	ln.seen = max(ln.seen, rem+cost)
	ln.counts, ln.rem = true, rem
	ln.nCounts++
	top := rem > 0 && rem+cost >= ln.seen
	if top {
		ln.tops++
		if ln.exact && ln.tops == autoBurstTops && ln.nCounts < autoBurstSample && ln.seen < ln.limit {
			// The server's bucket is full at less than its limit: the
			// client is alone on it, and starts again as it would have
			// with the burst known, at a fifth of the server's rate.
			ln.rate = max(ln.rate, ln.ceil*autoShareMax*float64(rem)/float64(ln.seen))
		}
	} else {
		ln.tops = 0
	}
	burst := ln.burst()
	reserve := min(burst/2, ln.ceil)
	// The first share of a spaced first count, if this is the count after.
	var spaced float64
	if ln.measured {
		spaced, ln.spaced = ln.spaced, 0
	}
	if !ln.measured {
		ln.firstShare(c, burst, reserve, now)
	} else if dt := now - ln.lastAt; dt >= ln.interval() {
		ln.measure(c, cost, dt, burst, reserve, spaced > 0 && !top)
		ln.lastR, ln.lastLo, ln.lastAt, ln.own = c.rem, c.lo, now, 0
	}
	if spaced > 0 && top {
		// The count after a spaced first one is again the most seen: the
		// server's bucket refilled to it, and, as far as one count can
		// tell, no one else spent it. The client keeps at least the share
		// it had before the spacing, and no more: in a crowd, the clients
		// whose first counts were near none see such a count too.
		ln.rate = max(ln.rate, spaced)
	}
	ln.rate = a.clamp(ln.rate, !ln.tokens)
	share := min(1, ln.rate/ln.ceil)
	if at, ok := ln.stepped(c, cost); ok {
		// The client's share of what is left above the reserve, as for
		// a first count: the level of a client that spent its grant
		// while the count could not show it is back with the server's.
		ln.raise(int64(share * max(at-reserve, 0)))
	}
	ln.lim.Lower(0, int64(float64(c.hi)*share))
	ln.prevLo = c.lo
}

// firstShare is the share rule's start, on the first count c of the lane
// (see Limiter).
func (ln *lane) firstShare(c roundedCount, burst, reserve float64, now int64) {
	rem := c.rem
	ln.measured = true
	// The fraction left of the burst as seen so far, and of the
	// limit when the limit is the burst: a first count may come from
	// a quota others have half spent, or from a server whose burst is
	// a small part of its limit (GCRA, Handler). The share of
	// nothing known yet takes the lower; keeping the rate the client
	// had takes the higher.
	f := min(float64(rem)/burst, 1)
	if ln.exact && ln.tops < autoBurstTops {
		// The burst is not known yet: it may be as short as what
		// this first count shows.
		f = min(float64(rem)/float64(ln.seen), 1)
	}
	fl := f
	if ln.exact {
		fl = min(float64(rem)/float64(ln.limit), 1)
	}
	if m := ln.fleetN; m > 0 {
		// The fleet says how many share the quota: an equal part, and
		// no less than the share of nothing known, so that a member
		// whose first count shows the quota spent does not start at
		// the floor.
		ln.rate = max(ln.ceil*f/float64(m), ln.ceil*autoShare0*max(fl, autoShareLeast))
	} else {
		// No lower than the rate the client already had, up to a
		// fifth of the server's, times the fraction left: calls
		// queued on the congestion-controlled bucket this lane takes
		// over must not all fail their deadlines at once. A token
		// limit starts at half: a prompt costs thousands, and a
		// twentieth of the rate would refuse most calls their
		// deadlines.
		first := autoShare0
		if ln.tokens {
			first = autoShareTokens
		}
		ln.rate = max(ln.ceil*first*max(fl, autoShareLeast), min(ln.rate, ln.ceil*autoShareMax)*f)
		if spent := 1 - fl; ln.exact && !ln.tokens && spent > 0 {
			// A first count that shows the limit part spent may come
			// from a quota others are spending at once (fifty clients
			// that start together see every count from the limit
			// down to none), or from a server whose burst is short.
			// One count cannot tell: the next call waits the more,
			// up to autoSpace, the more is spent, so that the second
			// calls of clients that started together are spread, not
			// sent together. The next count tells (below).
			ln.spaced = ln.rate
			ln.rate = 1 / (1/ln.rate + autoSpace*spent)
		}
	}
	// What the server says is left above the reserve, the client's
	// share of it may spend at once: ten calls made together with 590
	// of 600 left go together, not at the starting rate.
	ln.grant = int64(min(1, ln.rate/ln.ceil) * max(float64(rem)-reserve, 0))
	ln.lastR, ln.lastLo, ln.lastAt, ln.own = rem, c.lo, now, 0
}

// measure is the share rule's step on a count c, dt after the last
// measurement, on a response that cost cost (see Limiter). crowd is
// the count after a spaced first one that others have spent.
func (ln *lane) measure(c roundedCount, cost, dt int64, burst, reserve float64, crowd bool) {
	rem := c.rem
	secs := float64(dt) / float64(time.Second)
	own := float64(ln.own)
	used := max(ln.ceil*secs+float64(ln.lastLo-c.hi), own)
	if float64(rem+cost) >= burst {
		// The server's bucket is full: its refill was thrown away, so
		// what others spent cannot be told from it. The client is
		// alone enough to spend more.
		used = own
	}
	target := max(ln.ceil+(c.nearest(reserve)-reserve)/autoTau, autoMinTarget*ln.ceil)
	// The share of the target, plus the same small increase for
	// every client, which evens out the shares over time.
	next := ln.rate * 2
	if used > 0 {
		next = own*target/used + autoFair*ln.ceil*secs
	}
	next = min(max(next, ln.rate/2), ln.rate*2)
	// A decrease is averaged with the rate before, except on the
	// count after a spaced first one that others have spent: the first
	// measurement of a crowd, which the first share overestimated.
	if next < ln.rate && !crowd {
		next = (ln.rate + next) / 2
	}
	ln.rate = next
}

// windowOf reports whether a reported quota is restored whole at the end
// of a window whose end the response names (GitHub's x-ratelimit-reset):
// its remaining count is then exact until that end.
func (q *autoQuota) windowOf(qu *headers.Quota) bool {
	return qu.Family == headers.FamilyXRateLimit && !qu.RefillsToFull() && qu.Reset > 0
}

// endKnown reports whether a window's reset is its true end, not the
// Transport's MaxPause that capped it: a pause to a capped end, or a
// restore at it, would come before the server's.
func (q *autoQuota) endKnown(qu *headers.Quota) bool {
	mp := time.Duration(q.maxPause.Load())
	return mp <= 0 || qu.Reset < mp
}

// windowSlack is how far apart two reports of one window's end may be:
// GitHub's reset is in whole seconds.
const windowSlack = int64(time.Second)

// windowCount applies an exact count of a window (see windowOf): rem more
// calls until the window's end, then the whole limit. The client may
// spend all of rem at once, since the server's window allows it; its
// bucket holds the limit, is raised to rem by the first count of a
// window, lowered by each later one, paused to the window's end when the
// count is spent, and restored whole at that end. A count of a window
// already over is stale and ignored. The rate between is the server's
// average, which no call waits on while the counts and the reset rule.
// q.mu is held.
func (q *autoQuota) windowCount(ln *lane, qu *headers.Quota, cost, now int64) {
	a := q.a
	rem := qu.Remaining
	ln.windowed, ln.counts, ln.rem = true, true, rem
	ln.maxCost = max(ln.maxCost, cost)
	ln.seen = max(ln.seen, rem+cost)
	ln.nCounts++
	ln.rate = a.clamp(ln.ceil, true)
	if !q.endKnown(qu) {
		// The end is past what the Transport waits for: the count
		// holds, and the server's refusal will say when to come back.
		if !ln.measured {
			ln.measured, ln.grant = true, rem
		}
		ln.lim.Lower(0, rem)
		return
	}
	end := now + int64(qu.Reset)
	switch {
	case !ln.measured || end > ln.resetAt+windowSlack:
		ln.measured = true
		ln.resetAt = end
		ln.grant = rem
		q.restoreAt(ln, end)
	case end < ln.resetAt-windowSlack:
		return
	}
	ln.lim.Lower(0, rem)
	if rem == 0 {
		ln.lim.PauseUntil(a.epoch.Add(time.Duration(end)))
	}
}

// restoreAt gives ln's bucket the whole limit at end, on a's time line,
// unless a later window has been reported by then (its own count raised
// the bucket).
func (q *autoQuota) restoreAt(ln *lane, end int64) {
	d := time.Duration(end - q.a.now())
	restore := func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if ln.resetAt == end {
			ln.lim.Settle([]int64{ln.limit}, []int64{0})
		}
	}
	if c := q.a.cfg.clock; c != nil {
		c.AfterFunc(d, restore)
		return
	}
	time.AfterFunc(d, restore)
}

// latestPause is the end of the latest pause on l's buckets, or zero.
func latestPause(l *throttle.Limiter) time.Time { return ledger.LatestPause(l.Status(nil)) }

// pauseUntil pauses q's Limiter until t.
func (q *autoQuota) pauseUntil(t time.Time) {
	q.mu.Lock()
	l := q.lim
	q.mu.Unlock()
	l.PauseUntil(t)
}

// refused halves the rate of a learned lane, once per interval, never
// below the floor.
func (ln *lane) refused(a *Limiter, now int64) {
	if ln.cutEver && now-ln.cutAt < ln.interval() {
		return
	}
	ln.cutEver, ln.cutAt = true, now
	ln.refusals++
	ln.rate = a.clamp(ln.rate/2, !ln.tokens)
}

// clamp keeps a rate within the floor and, for requests, the maximum.
func (a *Limiter) clamp(v float64, requests bool) float64 {
	if requests && a.cfg.max > 0 {
		v = min(v, a.cfg.max)
	}
	if !(v >= a.cfg.floor) { // NaN too
		v = a.cfg.floor
	}
	return v
}

// apply sets the lane's bucket to its rate and its capacity: a quarter
// second of the rate (a tenth while congestion-controlled), or if more,
// the client's share of what the server last said was left above the
// reserve; for tokens at least the client's share of the server's burst,
// since a token cost is capped at the capacity; at least the largest cost
// seen and at most the server's burst. A token bucket's capacity never
// shrinks: a call queued with a cost capped at the capacity it saw must
// not fail as oversized when it is re-tuned. Changes of rate under 2% are
// not applied (SetRate re-times every waiter), nor changes of capacity
// under a quarter of it.
func (ln *lane) apply(a *Limiter) {
	if ln.placeholder {
		return // holds nothing back until reported
	}
	var c float64
	if ln.learned {
		c = max(math.Ceil(ln.rate*autoBurstTime), float64(ln.maxCost))
		share := min(1, ln.rate/ln.ceil)
		if ln.counts {
			reserve := min(ln.burst()/2, ln.ceil)
			c = max(c, math.Floor(share*(float64(ln.rem)-reserve)))
		}
		if ln.tokens {
			// A token cost is capped at the capacity (see LLM.Cost): a
			// capacity of a quarter second would cap every prompt. Hold
			// the client's share of the server's burst.
			c = max(c, math.Ceil(ln.burst()*share))
		}
		c = min(c, max(ln.burst(), float64(ln.maxCost)))
		if ln.windowed {
			// The window restores the whole limit at once.
			c = float64(max(ln.limit, ln.maxCost))
		}
		if ln.tokens {
			c = max(c, float64(ln.capacity))
		}
	} else {
		c = math.Ceil(ln.rate * autoCCBurst)
	}
	capacity := max(int64(c), 1)
	if d := capacity - ln.capacity; d > -ln.capacity/4 && d < max(ln.capacity/4, 1) && ln.grant == 0 {
		capacity = ln.capacity
	}
	r := ln.b.Status().Rate
	cur := perSecond(r)
	rateChanged := math.Abs(ln.rate-cur) > 0.02*cur
	if !rateChanged && capacity == ln.capacity && ln.grant == 0 {
		return
	}
	if rateChanged {
		r = rateOf(ln.rate)
		ln.b.SetRate(r)
	}
	if capacity != ln.capacity {
		ln.b.SetCapacity(capacity)
		ln.capacity = capacity
	}
	if ln.grant > 0 {
		if n := min(ln.grant, capacity) - ln.b.Status().Remaining; n > 0 {
			ln.lim.Settle([]int64{n}, []int64{0})
		}
		ln.grant = 0
	}
	if o := a.cfg.obs; o != nil {
		o.Observe(throttle.Event{Kind: throttle.EventTuned, Limit: ln.name, Cost: capacity, Rate: r})
	}
}

// stretchPause lengthens the pause the Transport put on l after a refusal
// by a random part of up to a quarter of it, so that clients refused at
// the same instant do not resume at the same instant; never past maxPause
// from now, the Transport's cap on any wait a server imposes. A pause is
// lengthened once: the refusals of the calls that were in flight with the
// first find it already lengthened, and lengthening it again for each
// would compound (a dozen refusals of a 2 s pause made it 7 s).
func (q *autoQuota) stretchPause(l *throttle.Limiter, maxPause time.Duration) {
	a := q.a
	now := a.wall()
	sts := l.Status(nil)
	until := ledger.LatestPause(sts)
	if until.IsZero() {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if until.Equal(q.stretched) {
		return
	}
	d := until.Sub(now)
	stretch := time.Duration(float64(d) * a.jitter(0, 0.25))
	if maxPause > 0 {
		stretch = min(stretch, maxPause-d)
	}
	if stretch > 0 {
		until = until.Add(stretch)
		// The stretch is of the server's pause: it keeps its cause.
		for _, st := range sts {
			if st.Cause != "" {
				l.Observe(throttle.Event{Kind: throttle.EventPaused, Limit: st.Name, Until: until, Reason: st.Cause})
			}
		}
		l.PauseUntil(until)
	}
	q.stretched = until
}
