package redisbucket

import (
	"time"

	"github.com/throttlekit/throttle"
)

// asked is what a call knows of its wait, for its observer events' Why
// (explain.go): the explanation of its first refusal, or, for a call that
// queued behind this process's calls without a decision of its own, the
// count of those calls. It makes nothing when the Limiter has no
// observer.
type asked struct {
	start time.Time
	ahead int // this process's calls it queued behind, when it did
	why   *throttle.WaitError
}

// refused records the explanation of d, a refusal, if the call has none
// yet (refusal).
func (e *engine) refused(a *asked, d decision, costs []int64) {
	if a.why == nil {
		a.why = e.refusal(d, costs, a.ahead, a.start)
	}
}

// refusal is the explanation of d, a refusal of costs by a call begun at
// start that queued behind ahead of this process's calls (0 when it did
// not: then its Ahead is the reserved sleepers); nil without an observer,
// for a cost no limit will cover and for a refusal by FailClosed, which
// their errors explain.
func (e *engine) refusal(d decision, costs []int64, ahead int, start time.Time) *throttle.WaitError {
	if e.o.obs == nil || d.granted || d.never || d.mode == ModeFailClosed {
		return nil
	}
	now := e.o.clock.Now()
	wait := d.wait
	if ahead == 0 {
		ahead = int(e.sleeping.Load())
	} else {
		wait += now.Sub(start) // its time in the line is part of its wait
	}
	return e.waitError(wait, e.limitOf(d, costs), ahead, now)
}

// reserved records the explanation of a reservation granted for an
// instant wait away, if the call has none yet: the limit whose level the
// reservation leaves longest below zero binds it.
func (e *engine) reserved(a *asked, res result, wait time.Duration, costs []int64) {
	if e.o.obs == nil || a.why != nil || wait <= 0 {
		return
	}
	// The levels before the take: the binding limit is the one that
	// takes longest to cover its cost from them, as for a refusal.
	before := make([]int64, len(res.levels))
	copy(before, res.levels)
	for i, c := range costs {
		before[2*i] += c
	}
	e.refused(a, decision{wait: wait, limit: e.binding(before, costs), mode: ModeRedis}, costs)
}

// explained is the explanation of a call that waited: the one recorded,
// or, when it queued behind this process's calls with no decision of its
// own, inLine's. nil for a call served at once, or without an observer.
func (e *engine) explained(a *asked, costs []int64) *throttle.WaitError {
	if a.why != nil || a.ahead == 0 {
		return a.why
	}
	return e.inLine(costs, a.ahead, a.start)
}

// inLine is the explanation of a call of costs begun at start that
// queued behind ahead of this process's calls and had no decision of its
// own: the calls ahead, the pause in force and the limit the levels last
// heard leave longest to refill, with as its wait the time it waited and
// what remains of the pause, a lower bound, the rest being unknown
// without a call. nil without an observer.
func (e *engine) inLine(costs []int64, ahead int, start time.Time) *throttle.WaitError {
	if e.o.obs == nil {
		return nil
	}
	now := e.o.clock.Now()
	we := e.waitError(now.Sub(start), e.heldLongest(costs), ahead, now)
	if !we.Paused.IsZero() {
		we.Wait += we.Paused.Sub(now)
	}
	return we
}

// limitOf is the limit that binds d's wait: the script's when Redis took
// it, else the one the levels last heard leave longest to refill.
func (e *engine) limitOf(d decision, costs []int64) int {
	if d.mode == ModeRedis {
		return d.limit
	}
	return e.heldLongest(costs)
}
