package auto

import (
	"slices"
	"strings"
	"time"

	"github.com/throttlekit/throttle"
)

// Quota returns the learned Gate of the quota named name, whose limits are
// the named ones in that order: a Gate of fixed limits, as a pool.Member's
// must be (every member of a pool has the same limits, since a call gives
// one cost per limit whichever member serves it). It is for a pool of keys
// or deployments whose quotas are not configured: each member's Gate is a
// Quota of its own name, and under an httpthrottle.Transport each learns
// from the answers of the calls sent through it, as a Gate that Pick gives
// learns from the calls of its host and credential.
//
// The first limit must be "requests": the one congestion control finds
// while the server reports no limit, and that its first limit on requests
// teaches. The others are among "tokens", "input-tokens" and
// "output-tokens", the token limits of OpenAI's and Anthropic's headers
// (see httpthrottle/llm for the costs a call gives them). No limits means
// "requests" alone. A token limit holds nothing back until a response
// reports it: until then its capacity is far beyond any call's cost and it
// reports no server rate. A limit the server reports that is not among
// the named ones is not kept, and neither is a second limit on requests
// (a per-day one beside a per-minute one): the quota keeps what it was
// told to, which the Gate's fixed limits need.
//
// A Quota is never forgotten (Idle and MaxQuotas leave it alone), its
// requests are not told apart by GitHub resource, and Within does not
// apply to it (give the pool a member with explicit limits instead). Under
// Fleet the processes of a fleet learn the quota of one name together.
// Stats reports it with its name as its Key.
//
// Calling Quota again with the same name returns the same Gate, if the
// limits are the same; other limits fail, with an error matching
// throttle.ErrInvalidOption, as do an empty name and limits outside the
// rule above.
func (a *Limiter) Quota(name string, limits ...string) (throttle.Gate, error) {
	if name == "" {
		return nil, invalidOption("Quota: an empty name")
	}
	if len(limits) == 0 {
		limits = []string{aimdLane}
	}
	if err := declarable(limits); err != nil {
		return nil, err
	}
	k := quotaKey{name: name, member: true}
	a.mu.Lock()
	defer a.mu.Unlock()
	if q := a.quotas[k]; q != nil {
		if !slices.Equal(q.declared, limits) {
			return nil, invalidOption("Quota %q: asked for limits %s, has %s", name, strings.Join(limits, ", "), strings.Join(q.declared, ", "))
		}
		return q.lim, nil
	}
	q := a.newQuota(k)
	q.declared = slices.Clone(limits)
	for _, n := range limits[1:] {
		ln := q.newLane(n)
		ln.tokens, ln.placeholder = true, true
		q.lanes = append(q.lanes, ln)
	}
	q.rebuild()
	return q.lim, nil
}

// declarable checks the limits given to Quota.
func declarable(limits []string) error {
	if limits[0] != aimdLane {
		return invalidOption("Quota: the first limit is %q; it must be %q", limits[0], aimdLane)
	}
	for i, n := range limits[1:] {
		if !tokenLane(n) {
			return invalidOption("Quota: limit %q is none of \"tokens\", \"input-tokens\", \"output-tokens\"", n)
		}
		if slices.Contains(limits[1:i+1], n) {
			return invalidOption("Quota: limit %q named twice", n)
		}
	}
	return nil
}

// placeholderCapacity is the capacity and the rate a second of a declared
// token limit not reported yet: far beyond any call's cost, so that it
// holds nothing back, and far within the exact arithmetic's range.
const placeholderCapacity = 1 << 40

// declaredLane is limitLane's for a quota of declared limits, past the
// first limit on requests (which takes the congestion-controlled lane, as
// in any quota): the declared token lane a limit the server reports for
// the first time teaches, or nil when there is none (a second limit on
// requests, a token limit not declared). The lane held nothing back until
// then, and starts as a new lane does (see limitLane). q.mu is held.
func (q *autoQuota) declaredLane(name string, tokens bool, now int64) *lane {
	if !tokens {
		return nil
	}
	ln := q.lane(name)
	if ln == nil || !ln.placeholder {
		return nil
	}
	ln.placeholder = false
	ln.policy, ln.heardAt = name, now
	// Errors only for values outside their range, which these are not.
	_ = ln.b.SetRate(throttle.Per(1, time.Second))
	_ = ln.b.SetCapacity(1)
	st := ln.b.Status()
	ln.rate, ln.capacity = perSecond(st.Rate), st.Capacity
	ln.lim.Lower(0, 0)
	return ln
}
