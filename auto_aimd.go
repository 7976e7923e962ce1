package throttle

import "time"

// The constants of congestion control; see AutoLimiter.
const (
	autoSlowGrowth = 1.5  // growth per epoch in slow start
	autoFirstCut   = 0.5  // cut on the refusal that ends slow start
	autoSlowCut    = 0.5  // deepest cut on later refusals
	autoCut        = 0.8  // least cut on later refusals
	autoCutJitter  = 0.1  // cuts are further multiplied by [1-this, 1)
	autoApproach   = 0.5  // part of the distance to W gained per epoch
	autoMaxStep    = 0.1  // most gained per epoch, as a part of the rate
	autoProbe      = 0.01 // growth per epoch at W, as a part of W
	autoBusy       = 0.5  // an epoch counts if the calls went this near the rate
	autoCCBurst    = 0.1  // seconds of its rate a congestion-controlled bucket holds
	autoMinEpoch   = 250 * time.Millisecond
)

// epoch is how long the rate is held before it is judged: long enough for
// two calls, at least autoMinEpoch.
func (ln *lane) epoch() int64 {
	return max(int64(autoMinEpoch), int64(1/ln.rate*float64(time.Second)))
}

// congestion applies one response to a lane the server tells nothing
// about: ok for a success, refused for a refusal (see AutoLimiter).
func (ln *lane) congestion(a *AutoLimiter, ok, refused bool, cost int64, now int64) {
	if ln.epochAt == 0 && ln.epochOK == 0 {
		ln.epochAt = now
	}
	if refused {
		if ln.cutEver && now-ln.cutAt < ln.epoch() {
			return // the same congestion: one cut
		}
		next := ln.rate * autoFirstCut
		if !ln.slow && now > ln.cutAt {
			// What the server let through since the last refusal, pause
			// included, is the client's share of the quota: the server
			// refills during the pause what the client sends after it,
			// and refused once it was spent.
			delivered := float64(ln.okSince) / (float64(now-ln.cutAt) / float64(time.Second))
			next = min(max(delivered, ln.rate*autoSlowCut), ln.rate*autoCut)
		}
		// The rate to climb back to is the cut rate itself: after slow
		// start because the server's burst hid the overload until the
		// refusal, later because it is what the server let through.
		ln.wmax = next
		ln.rate = a.clamp(next*a.jitter(1-autoCutJitter, 1), true)
		ln.slow = false
		ln.cutEver, ln.cutAt = true, now
		ln.refusals++
		ln.epochAt, ln.epochOK, ln.okSince = now, 0, 0
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
		switch {
		case ln.slow:
			ln.rate *= autoSlowGrowth
		case ln.rate < ln.wmax:
			// At least a probe's step, so that W is reached, not only
			// approached.
			step := min((ln.wmax-ln.rate)*autoApproach, ln.rate*autoMaxStep)
			ln.rate = min(ln.rate+max(step, autoProbe*ln.wmax), ln.wmax)
		default:
			// Probing, faster the longer it goes unrefused (convex, as
			// CUBIC's): a sixteenth more for each epoch since the cut.
			k := float64(now-ln.cutAt) / float64(ln.epoch())
			ln.rate += autoProbe * ln.wmax * (1 + k/16)
		}
		ln.rate = a.clamp(ln.rate, true)
	}
	ln.epochAt, ln.epochOK = now, 0
}
