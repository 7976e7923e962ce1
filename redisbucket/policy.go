package redisbucket

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/throttlekit/throttle"
)

// ErrUnavailable is wrapped by the errors of New and NewLimiter when Redis
// does not answer their check (see WithStartWithoutRedis), by the errors
// of Acquire and of Permit methods when Redis cannot be reached and the
// failure policy cannot decide for it (FailClosed, or a permit taken from
// Redis that cannot be settled now), and by the Err of the observer's
// events for a breaker that a failed start opened.
var ErrUnavailable = errors.New("redisbucket: redis unavailable")

// FailurePolicy decides while Redis is unreachable, slow or failing over,
// that is after a call timed out or failed and until a probe succeeds.
type FailurePolicy struct {
	mode  Mode
	rates []throttle.Rate
}

// FailClosed refuses every request while Redis is unavailable: TryAcquire
// returns false and Acquire fails at once with an error wrapping
// ErrUnavailable. Nothing can exceed the shared limit; nothing gets through.
var FailClosed = FailurePolicy{mode: ModeFailClosed}

// FailOpen grants every request while Redis is unavailable. This is what
// Envoy's rate limit filter does by default: the limit is lost, the service
// keeps working.
var FailOpen = FailurePolicy{mode: ModeFailOpen}

// FailLocal limits each process on its own while Redis is unavailable, with
// a local throttle.Bucket per limit that is meant to hold this process's safe
// share of the shared limit. rates gives the local rate of each limit, in the
// limiter's order; a limit without one gets one tenth of its shared rate. A
// local bucket's capacity is the shared capacity scaled by the same ratio as
// its rate, rounded up, and at least 1. A request whose cost exceeds a local
// capacity is refused while the policy is in force.
//
// A limit without an explicit rate gets 1/N of its shared rate (and
// capacity), where N is the number of live processes the fleet registry
// last counted: each process registers in a key next to the limiter's,
// with a lifetime (WithFleetTTL, 10 s by default) refreshed by its normal
// calls. Before the first count it gets one tenth: a process that has
// not reached Redis since it started (WithStartWithoutRedis), or any
// process when WithFleetTTL(0) turns the registry off. That tenth is a
// guess at a fleet of 10: N such processes grant N/10 of the limit
// together, 3x the limit for 30, so a fleet of more than 10 that may start
// while Redis is down should give explicit rates (the limit divided by
// the largest fleet). A process learns of
// processes that started after it at its next registration, within a
// quarter of the TTL. An explicit rate
// overrides the count; with explicit rates, choose them so that the sum
// over all processes stays within the shared limit. FailLocal() is the
// default policy. When the breaker opens, each local bucket starts no
// fuller than its share of the level its last view of Redis gave (not
// refilled since), in debt while the fleet's reservations queue below
// zero, as deep as its view saw the queue until Redis was lost and
// drained since (beyond one local capacity, the rest as a pause of the
// local buckets), and what it grants after the fleet's first process is back
// on Redis is charged there.
func FailLocal(rates ...throttle.Rate) FailurePolicy {
	return FailurePolicy{mode: ModeFailLocal, rates: rates}
}

// localBuckets builds the FailLocal buckets for the limits.
func (p FailurePolicy) localBuckets(limits []shape, opts ...throttle.Option) ([]*throttle.Bucket, error) {
	if len(p.rates) > len(limits) {
		return nil, invalidOption("FailLocal(%d rates): %d limits take at most %d rates", len(p.rates), len(limits), len(limits))
	}
	bs := make([]*throttle.Bucket, len(limits))
	for i, l := range limits {
		r := throttle.Per(l.rate.Tokens(), 10*l.rate.Period())
		if l.rate.Period() > (1<<63-1)/10 {
			r = throttle.Per(l.rate.Tokens()/10, l.rate.Period())
		}
		if i < len(p.rates) {
			r = p.rates[i]
		}
		c := scaleCapacity(l, r)
		b, err := throttle.New(c, r, append(opts, throttle.WithName(l.name))...)
		if err != nil {
			return nil, fmt.Errorf("%w: redisbucket: FailLocal rate %v for limit %q: %w", throttle.ErrInvalidOption, r, l.name, err)
		}
		bs[i] = b
	}
	return bs, nil
}

// scaleCapacity returns ceil(capacity * local rate / shared rate), at least 1
// and at most the shared capacity.
func scaleCapacity(l shape, local throttle.Rate) int64 {
	if l.rate.Tokens() == 0 || local.Period() <= 0 {
		return l.capacity
	}
	// capacity * (lt/lp) / (st/sp) = capacity * lt * sp / (lp * st), in float:
	// this sizes a fallback, it decides nothing exactly.
	f := float64(l.capacity) * float64(local.Tokens()) * float64(l.rate.Period()) /
		(float64(local.Period()) * float64(l.rate.Tokens()))
	c := int64(f)
	if float64(c) < f {
		c++
	}
	return max(1, min(c, l.capacity))
}

// fleetShare returns limit l's rate divided among live processes.
func fleetShare(l shape, live int64) throttle.Rate {
	if l.rate.Period() <= (1<<63-1)/time.Duration(live) {
		return throttle.Per(l.rate.Tokens(), l.rate.Period()*time.Duration(live))
	}
	return throttle.Per(max(l.rate.Tokens()/live, 1), l.rate.Period())
}

// shareChanged gives the FailLocal buckets without an explicit rate 1/live
// of their limit, when the fleet's live count changed.
func (e *engine) shareChanged(live int64) {
	if e.local == nil || live < 1 || e.share.Swap(live) == live {
		return
	}
	for i := len(e.o.policy.rates); i < len(e.limits); i++ {
		l := e.limits[i]
		r := fleetShare(l, live)
		_ = e.localBs[i].SetRate(r)
		_ = e.localBs[i].SetCapacity(scaleCapacity(l, r))
	}
}

// opened runs when the breaker opens: the local buckets start no fuller
// than this process's share of the levels its last view gave Redis, not
// refilled since, so that a fleet whose Redis just spent its capacity does
// not spend it again locally. The fleet's other processes may have spent
// or reserved the refill since this one's last reply, and their
// reservations' sleepers go at their instants whether Redis answers or
// not: a share started from the view refilled came on top of them (8
// processes with reservations through a kill: 1-3 vendor 429s a run, at
// the first local grants, 0.4-0.6 s after the kill). A level below
// zero is the fleet's queue of reservations, whose sleepers go at their
// instants whether Redis answers or not: the share starts as deep in
// debt as the queue, held at the view's depth until Redis was lost (the
// fleet's others reserved behind it meanwhile) and drained since
// (seen.shareStart, as a return's hint counts it), so that local grants
// begin as the queue would have drained. Drained from the breaker's
// opening instead, which comes a patience after a process's first call
// since the loss, itself as late as its waiters sleep, the queue was
// waited for twice (8 processes through a kill: a process granted
// nothing for 0.5 s after the queue's end).
// Started at zero, they came on top of the queue (8 processes with
// reservations through a kill: one vendor 429 a run, and the 429s of the
// others, which a pause in failure mode does not reach, after it). A
// local bucket's debt stops at one capacity, and a fleet's queue runs
// deeper than its share's capacity (32 processes of 4 waiters each: up to
// 2.5 s of the quota, against a share's 1.3 s): the rest is a pause of
// the local buckets, which refill nothing while it lasts (at 32, 5-17
// vendor 429s a run through a kill or a freeze without it).
func (e *engine) opened() {
	if e.local == nil {
		return
	}
	lv, ok := e.seen.shareStart(e.o.clock.Now())
	if !ok {
		return
	}
	var rest time.Duration
	for i, b := range e.localBs {
		st := b.Status()
		d := int64(math.Floor(lv[i] * float64(st.Capacity) / float64(e.limits[i].capacity)))
		e.local.Lower(i, d)
		if beyond := -st.Capacity - d; beyond > 0 && st.Rate.Tokens() > 0 {
			rest = max(rest, time.Duration(float64(beyond)*float64(st.Rate.Period())/float64(st.Rate.Tokens())))
		}
	}
	if rest > 0 {
		e.local.PauseUntil(e.o.clock.Now().Add(rest))
	}
}

// anyAge is a view's age that levels accepts from any view.
const anyAge = time.Duration(1<<63 - 1)

// fallback decides by the failure policy.
func (e *engine) fallback(costs []int64, cause error, now time.Time) decision {
	d := decision{mode: e.o.policy.mode, cause: cause}
	untilProbe := max(e.br.openUntil().Sub(now), time.Millisecond)
	switch d.mode {
	case ModeFailOpen:
		d.granted = true
		e.seen.spent(now, costs)
	case ModeFailClosed:
		d.wait = untilProbe
	case ModeFailLocal:
		if e.br.isSuspect() {
			// Redis is slow, not known down: it waits for the next try.
			// While some processes of a fleet time out and others are
			// still answered, Redis keeps granting the whole quota to
			// the others, and every local grant is over it (64
			// processes starting together on two cores took 33 such
			// grants and as many vendor 429s). The wait lasts at most
			// the breaker's patience; then it opens and the share
			// applies.
			d.wait, d.tried = untilProbe, e.br.tryEnds()
			break
		}
		p, ok, err := e.local.TryAcquirePermit(costs...)
		switch {
		case ok:
			d.granted, d.local = true, p
			e.seen.spent(now, costs)
		case err != nil:
			// Above a local capacity: refused until Redis is back.
			d.wait = untilProbe
		default:
			w, err := e.local.WaitTime(costs...)
			if err != nil {
				w = untilProbe
			}
			d.wait = min(max(w, time.Nanosecond), untilProbe)
		}
	}
	return d
}

// fallbackView is what peek reports while the failure policy decides:
// FailOpen full, FailClosed empty, FailLocal the local buckets.
func (e *engine) fallbackView(v *view, costs []int64, now time.Time) {
	untilProbe := max(e.br.openUntil().Sub(now), time.Millisecond)
	switch e.o.policy.mode {
	case ModeFailOpen:
		for i, l := range e.limits {
			v.tokens[i] = float64(l.capacity)
		}
	case ModeFailClosed:
		v.wait = untilProbe
	case ModeFailLocal:
		if slices.ContainsFunc(costs, func(c int64) bool { return c > 0 }) {
			w, err := e.local.WaitTime(costs...)
			if err != nil {
				w = untilProbe
			}
			v.wait = w
		}
		for i, b := range e.localBs {
			v.tokens[i] = b.Status().Level
		}
	}
}
