package auto

import (
	"math"
	"time"
)

// The constants of congestion control; see Limiter.
const (
	// autoDouble is how long slow start takes to double the rate. A
	// server's burst hides the overload until it is spent; with a burst of
	// one second of the quota, a rate that grows at g per second is at
	// e^x times the quota when the burst runs out, where e^x-1-x = g*1s.
	// For the first cut, a halving, to land at or under the quota, e^x
	// must be at most 2: g = 1-ln 2 = 0.307 per second, a doubling every
	// ln 2/g = 2.26 s. All clients in slow start grow at the same g,
	// whatever their number, and so does their sum.
	autoDouble = 2260 * time.Millisecond
	// autoStartDouble is how long slow start takes to double the rate of
	// a client on its own (not under Fleet): a client alone must go
	// from the initial 2/s to a quota of 50/s or more within a couple of
	// seconds, or the climb costs more than a 429 would. The overshoot
	// this makes is undone by the first cut, autoStartCut, sized for it.
	autoStartDouble = 500 * time.Millisecond
	// autoProbeRamp is how many doubling times (autoDouble) the probe's
	// growth takes to rise from nothing to its fastest, a doubling every
	// autoDouble.
	autoProbeRamp = 4
	autoFirstCut  = 0.5  // cut on the refusal that ends the fleet's slow start
	autoSlowCut   = 0.5  // deepest cut on later refusals
	autoCut       = 0.8  // least cut on later refusals
	autoCutJitter = 0.1  // cuts are further multiplied by [1-this, 1)
	autoApproach  = 0.5  // part of the distance to W gained per epoch
	autoMaxStep   = 0.1  // most gained per epoch, as a part of the rate
	autoStep      = 0.01 // least gained per epoch below W, as a part of W
	autoBusy      = 0.5  // an epoch counts if the calls went this near the rate
	autoCCBurst   = 0.1  // seconds of its rate a congestion-controlled bucket holds
	autoMinEpoch  = 250 * time.Millisecond
	// autoMeasure is the least time after a pause over which what the
	// server let through measures the client's share.
	autoMeasure = time.Second
)

// autoStartCut is the cut on the refusal that ends a fast slow start
// (autoStartDouble): with a server's burst of up to one second of its
// quota, a sum of rates growing at g per second is e^x times the quota when
// the burst runs out, where e^x-1-x = g*1s; cutting by e^-x lands at or
// under the quota. N independent clients in slow start all grow at g, so
// their sum does too, and each pays about one 429. A burst shorter than a
// second lands the cut lower (0.52 of the quota for 0.2 s), a longer one
// higher: the second refusal corrects it.
var autoStartCut = overshootCut(math.Ln2 / autoStartDouble.Seconds() * autoStartBurst)

// autoStartBurst is the server's burst, in seconds of its quota, that
// autoStartCut is sized for: one second, and half a second more because
// the rate grows in steps at the end of each epoch, not smoothly, and
// because a client whose calls happen to meet the server's refills goes
// on growing after the others are refused (TestAutoStartCut).
const autoStartBurst = 1.5

// overshootCut returns e^-x where e^x-1-x = g (g > 0): Newton's method
// from x = 2, which converges from above since the function is convex.
func overshootCut(g float64) float64 {
	x := 2.0
	for range 50 {
		x -= (math.Exp(x) - 1 - x - g) / (math.Exp(x) - 1)
	}
	return math.Exp(-x)
}

// startDouble is slow start's doubling time for the lane, and
// startCut the cut that ends it: the fleet's lane keeps the cautious
// schedule, since its members join at once at N times the initial rate,
// over the quota before any growth (see Fleet).
func (ln *lane) startDouble() time.Duration {
	if ln.pooled {
		return autoDouble
	}
	return autoStartDouble
}

func (ln *lane) startCut() float64 {
	if ln.pooled {
		return autoFirstCut
	}
	return autoStartCut
}

// epoch is how long the rate is held before it is judged: long enough for
// two calls, at least autoMinEpoch.
func (ln *lane) epoch() int64 {
	return max(int64(autoMinEpoch), int64(1/ln.rate*float64(time.Second)))
}

// congestion applies one response to a lane the server tells nothing
// about: ok for a success, refused for a refusal (see Limiter).
func (ln *lane) congestion(a *Limiter, ok, refused bool, cost int64, now int64) {
	if ln.epochAt == 0 && ln.epochOK == 0 {
		ln.epochAt = now
	}
	if ln.fleet != nil {
		// The fleet's congestion control decides (see Fleet): count.
		if refused {
			ln.fleet.refused = true
		} else if ok {
			ln.fleet.ok += max(cost, 1)
		}
		return
	}
	if refused {
		ln.refused429(a, now)
		return
	}
	if !ok {
		return
	}
	ln.epochOK += max(cost, 1)
	ln.okSince += max(cost, 1)
	el := now - ln.epochAt
	if el < ln.epoch() {
		return
	}
	got := float64(ln.epochOK) / (float64(el) / float64(time.Second))
	if got >= autoBusy*ln.rate {
		// Growth is by the time the epoch lasted, up to two epochs: a
		// response that comes late is not a licence to jump.
		secs := float64(min(el, 2*ln.epoch())) / float64(time.Second)
		g := math.Ln2 / autoDouble.Seconds() // the probe's at its fastest, per second
		switch {
		case ln.slow:
			ln.rate *= math.Exp(math.Ln2 / ln.startDouble().Seconds() * secs)
		case ln.rate < ln.wmax:
			// At least a small step, so that W is reached, not only
			// approached.
			step := min((ln.wmax-ln.rate)*autoApproach, ln.rate*autoMaxStep)
			ln.rate = min(ln.rate+max(step, autoStep*ln.wmax), ln.wmax)
		default:
			// Probing, faster the longer it goes unrefused (convex, as
			// CUBIC's): the growth per second rises from nothing to g over
			// autoProbeRamp doubling times since the cut.
			since := float64(now-ln.cutAt) / float64(time.Second)
			ramp := autoProbeRamp * autoDouble.Seconds()
			ln.rate *= math.Exp(g * min(1, since/ramp) * secs)
		}
		ln.rate = ln.bound(a, ln.rate)
	}
	ln.epochAt, ln.epochOK = now, 0
}

// bound keeps a congestion-controlled rate within the floor and the
// maximum, and for a limit the server named, at most its rate.
func (ln *lane) bound(a *Limiter, v float64) float64 {
	if ln.learned {
		v = min(v, ln.ceil)
	}
	return a.clamp(v, !ln.tokens)
}

// refused429 applies a refusal to a congestion-controlled lane.
func (ln *lane) refused429(a *Limiter, now int64) {
	if ln.cutEver && now < ln.quietUntil {
		// The same congestion: one cut. The refusals of calls sent before
		// the cut had any effect tell nothing new.
		return
	}
	next := ln.rate * ln.startCut()
	switch {
	case ln.slow:
	case now-ln.resumeAt < int64(autoMeasure):
		// Refused again soon after the pause: too soon to measure the
		// share, and most likely by others that have not cut yet. The
		// least cut.
		next = ln.rate * autoCut
	default:
		// What the server let through since the last refusal, pause
		// included, is the client's share of the quota: the server
		// refills during the pause what the client sends after it, and
		// refused once it was spent.
		delivered := float64(ln.okSince) / (float64(now-ln.cutAt) / float64(time.Second))
		next = min(max(delivered, ln.rate*autoSlowCut), ln.rate*autoCut)
	}
	// The rate to climb back to is the cut rate itself: after slow start
	// because the server's burst hid the overload until the refusal, later
	// because it is what the server let through.
	ln.wmax = next
	ln.rate = ln.bound(a, next*a.jitter(1-autoCutJitter, 1))
	ln.slow = false
	ln.cutEver, ln.cutAt = true, now
	// The Transport has paused the bucket (see stretchPause): calls resume
	// at the cut rate when the pause ends, and its effect shows an epoch
	// later.
	ln.resumeAt = now
	if ln.b != nil {
		if u := ln.b.Status().Paused; !u.IsZero() {
			ln.resumeAt = max(now, int64(u.Sub(a.epoch)))
		}
	}
	ln.quietUntil = ln.resumeAt + ln.epoch()
	ln.refusals++
	ln.epochAt, ln.epochOK, ln.okSince = now, 0, 0
}
