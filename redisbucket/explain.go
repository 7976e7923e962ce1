package redisbucket

import (
	"context"
	"fmt"
	"time"

	"github.com/throttlekit/throttle"
)

// A Limiter explains its waits as the core's do, from what this process
// knows without a call: the pause in force (the latest a reply or the
// pause feed reported, with its cause when this process stored it or
// heard it on the feed) and its own reserved sleepers ahead of a refused
// call. The fleet's queue is in Redis and not counted.

// pauseAt returns the end, on the Limiter's clock, of the pause in force
// at now, and its cause ("" when unknown); zero if none is, or there is
// no reply yet to convert the server's clock by.
func (e *engine) pauseAt(now time.Time) (time.Time, string) {
	until, cause := e.pz.latest()
	if until <= 0 {
		return time.Time{}, ""
	}
	end, ok := e.seen.local(until)
	if !ok || !end.After(now) {
		return time.Time{}, ""
	}
	return end, cause
}

// waitError explains a wait of wait bound by limit i, with ahead calls of
// this process ahead of it, as things stand at now: with the pause in
// force then and its cause.
func (e *engine) waitError(wait time.Duration, i, ahead int, now time.Time) *throttle.WaitError {
	we := &throttle.WaitError{Wait: wait, Limit: e.limits[i].name, Ahead: ahead}
	we.Paused, we.Cause = e.pauseAt(now)
	return we
}

// pausedPast is the refusal of a call about to queue in the local line,
// with a deadline before the end of the pause in force: that part of its
// wait is certain (a pause is extended, never shortened), so it is refused
// at once, as the line's head would be, rather than left to time out in
// the line with no explanation. nil when the call may still be served in
// time.
func (e *engine) pausedPast(ctx context.Context, costs []int64) *throttle.WaitError {
	dl, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	now := e.o.clock.Now()
	end, cause := e.pauseAt(now)
	if end.IsZero() || !end.After(dl) {
		return nil
	}
	return &throttle.WaitError{Wait: end.Sub(now), Limit: e.limits[e.heldLongest(costs)].name,
		Ahead: 1 + e.line.queued() + int(e.sleeping.Load()), Paused: end, Cause: cause}
}

// heldLongest is the limit, of those costs take from, that the levels
// last heard leave the longest to refill for costs (binding), or the
// first without a view: every limit is held until the pause's end, and the
// one that binds is the one whose own instant comes last.
func (e *engine) heldLongest(costs []int64) int {
	i := 0
	for costs[i] <= 0 {
		i++
	}
	if lv := e.seen.pairs(); lv != nil {
		if j := e.binding(lv, costs); costs[j] > 0 {
			i = j
		}
	}
	return i
}

// Explain explains the wait a call with costs would have now, before the
// call: the wait WaitTime reports, the limit that binds it, the pause in
// force with its cause (as Status reports them) and, in Ahead, this
// process's calls queued or reserved before it; other processes' calls
// are in the wait, not in Ahead. A zero Wait says Redis would grant the
// costs now, though a TryAcquire of this process would still wait for
// its queued calls. It makes the one Redis read WaitTime makes, which
// takes nothing and serves no waiter, and fails as WaitTime does; while
// the failure policy decides, it answers from the policy's view.
func (l *Limiter) Explain(costs ...int64) (throttle.WaitError, error) {
	return l.ExplainContext(context.Background(), costs...)
}

// ExplainContext is Explain with a context for the Redis call.
func (l *Limiter) ExplainContext(ctx context.Context, costs ...int64) (throttle.WaitError, error) {
	e := l.e
	if err := e.check(costs); err != nil {
		return throttle.WaitError{}, err
	}
	v, err := e.peek(ctx, costs)
	if err != nil {
		return throttle.WaitError{}, err
	}
	if v.never {
		return throttle.WaitError{}, fmt.Errorf("limit %q: %w", e.limits[v.limit].name, throttle.ErrCostExceedsCapacity)
	}
	i := v.limit
	if v.fallback || v.wait == 0 {
		i = e.heldLongest(costs)
	}
	return *e.waitError(v.wait, i, int(e.waiting.Load()+e.sleeping.Load()), e.o.clock.Now()), nil
}

// Observe hears e, an event from outside the Limiter that names one of its
// limits: with it a Limiter is a throttle.Observer, which the HTTP
// Transport tells of a server's refusals and pauses. An EventPaused with a
// Reason tells the Limiter what asked for its pause ending at e.Until:
// told before PauseUntil(e.Until), or while the pause that call stored is
// in force, the Reason is that pause's Cause in WaitError and Status, and
// PauseUntil publishes it with the pause to the processes that hear the
// pause feed. EventPaused and an EventRejected with a Reason (a server
// that refused the account) are passed on to the observer (WithObserver),
// as the core Limiter passes them to its buckets' observers, with Mode
// ModeRedis; other kinds are dropped, since the Limiter reports its own
// grants, refusals and settlements and one told of them again would count
// them twice. An event naming no limit of the Limiter is dropped.
func (l *Limiter) Observe(ev throttle.Event) {
	e := l.e
	if !l.names(ev.Limit) {
		return
	}
	switch {
	case ev.Kind == throttle.EventPaused:
		if ev.Reason != "" {
			if end := e.causes.tell(ev.Until, ev.Reason); end > 0 {
				e.pz.told(end, ev.Reason)
			}
		}
	case ev.Kind == throttle.EventRejected && ev.Reason != "":
	default:
		return
	}
	if e.o.obs != nil {
		e.o.obs.Observe(Event{Event: ev, Mode: ModeRedis})
	}
}

// names reports whether name is one of the Limiter's limits'.
func (l *Limiter) names(name string) bool {
	for _, s := range l.e.limits {
		if s.name == name {
			return true
		}
	}
	return false
}

var _ throttle.Observer = (*Limiter)(nil)
