package redisbucket

import (
	"context"
	"fmt"
	"time"

	"github.com/throttlekit/throttle"
)

// check validates costs like the core does.
func (e *engine) check(costs []int64) error {
	if len(costs) != len(e.limits) {
		return costCount(len(costs), len(e.limits))
	}
	any := false
	for i, c := range costs {
		if c < 0 || (len(costs) == 1 && c == 0) {
			return throttle.ErrInvalidCost
		}
		any = any || c > 0
		if c > e.limits[i].capacity {
			if e.limits[i].name == "" {
				return fmt.Errorf("%w: cost %d, capacity %d", throttle.ErrCostExceedsCapacity, c, e.limits[i].capacity)
			}
			return fmt.Errorf("limit %q: %w: cost %d, capacity %d", e.limits[i].name, throttle.ErrCostExceedsCapacity, c, e.limits[i].capacity)
		}
	}
	if !any {
		return throttle.ErrInvalidCost
	}
	return nil
}

// costCount is the error for got costs given for want limits, as the core
// words it.
func costCount(got, want int) error {
	costs, limits := "costs", "limits"
	if got == 1 {
		costs = "cost"
	}
	if want == 1 {
		limits = "limit"
	}
	return fmt.Errorf("%w: got %d %s for %d %s", throttle.ErrInvalidCost, got, costs, want, limits)
}

// tryAcquire decides once and never waits; it refuses while local Acquire
// callers are queued, so it does not jump their queue.
func (e *engine) tryAcquire(ctx context.Context, costs []int64) (bool, error) {
	_, ok, err := e.tryDecide(ctx, costs, "")
	return ok, err
}

// tryDecide is tryAcquire under the permit id permit ("" for none),
// returning the decision as well.
func (e *engine) tryDecide(ctx context.Context, costs []int64, permit string) (decision, bool, error) {
	if err := e.check(costs); err != nil {
		return decision{}, false, err
	}
	if n := e.waiting.Load(); n > 0 {
		why := e.inLine(costs, int(n+e.sleeping.Load()), e.o.clock.Now())
		e.count(decision{}, costs, throttle.EventRejected, 0, why)
		return decision{}, false, nil
	}
	d, err := e.decide(ctx, costs, permit)
	if err != nil {
		return decision{}, false, err
	}
	kind := throttle.EventRejected
	if d.granted {
		kind = throttle.EventGranted
	}
	e.count(d, costs, kind, d.wait, e.refusal(d, costs, 0, time.Time{}))
	return d, d.granted, nil
}

// acquire waits until the costs are granted: decide, and when refused,
// sleep on the injected clock for the wait the script returned, outside
// any lock, then decide again. Only the head of the local FIFO queue sleeps
// on a timer; the others wait on their own channel in the queue, so each
// grant wakes one goroutine.
func (e *engine) acquire(ctx context.Context, costs []int64, permit string, dec func(context.Context) (decision, error)) (decision, error) {
	if err := e.check(costs); err != nil {
		return decision{}, err
	}
	a := asked{start: e.o.clock.Now()}
	var d decision
	have := false
	gen := e.est.gen.Load()
	if e.waiting.Load() == 0 {
		var err error
		if d, err = dec(ctx); err != nil {
			return d, err
		}
		if d.granted {
			e.count(d, costs, throttle.EventGranted, 0, nil)
			return d, nil
		}
		e.refused(&a, d, costs)
		if err := e.hopeless(ctx, &d, costs); err != nil {
			return d, err
		}
		have = true
	}
	e.waiting.Add(1)
	defer e.waiting.Add(-1)
	if !e.line.tryAcquire() {
		have = false
		if we := e.pausedPast(ctx, costs); we != nil {
			e.count(d, costs, throttle.EventRejected, we.Wait, we)
			return d, we
		}
		if e.o.obs != nil {
			a.ahead = 1 + e.line.queued() + int(e.sleeping.Load())
		}
		if err := e.line.acquire(ctx); err != nil {
			e.count(d, costs, throttle.EventCancelled, e.o.clock.Now().Sub(a.start), e.explained(&a, costs))
			return d, err
		}
	}
	defer e.line.release()
	for {
		if !have {
			gen = e.est.gen.Load()
			var done bool
			var err error
			if d, done, err = e.step(ctx, costs, &a, dec); done {
				return d, err
			}
		}
		have = false
		if err := e.waitOut(ctx, d, gen, costs, &a); err != nil {
			return d, err
		}
	}
}

// step takes one decision with dec for the Acquire a:
// done, with the Acquire's result, when it is granted, failed or hopeless;
// otherwise d is to be waited out (waitOut).
func (e *engine) step(ctx context.Context, costs []int64, a *asked, dec func(context.Context) (decision, error)) (d decision, done bool, err error) {
	if d, err = dec(ctx); err != nil {
		if ctxErr(ctx) != nil {
			e.count(d, costs, throttle.EventCancelled, e.o.clock.Now().Sub(a.start), e.explained(a, costs))
		}
		return d, true, err
	}
	if d.granted {
		e.count(d, costs, throttle.EventGranted, e.o.clock.Now().Sub(a.start), e.explained(a, costs))
		return d, true, nil
	}
	e.refused(a, d, costs)
	if err := e.hopeless(ctx, &d, costs); err != nil {
		return d, true, err
	}
	return d, false, nil
}

// waitOut sleeps d.wait (waitTurn) for the Acquire a, counting it
// cancelled if ctx ends first.
func (e *engine) waitOut(ctx context.Context, d decision, gen uint64, costs []int64, a *asked) error {
	if err := e.waitTurn(ctx, d, gen); err != nil {
		e.count(d, costs, throttle.EventCancelled, e.o.clock.Now().Sub(a.start), e.explained(a, costs))
		return err
	}
	return nil
}

// hopeless returns the error that ends an Acquire refused with d: a limit
// that never refills, FailClosed, or a deadline before the certain part of
// the wait ends (estimates.go). A wait past the deadline that is not
// certain sets d.hoping instead.
func (e *engine) hopeless(ctx context.Context, d *decision, costs []int64) error {
	var err error
	var why *throttle.WaitError
	switch {
	case d.never:
		err = throttle.ErrCostExceedsCapacity
		if n := e.limits[d.limit].name; n != "" {
			err = fmt.Errorf("limit %q: %w", n, err)
		}
	case d.mode == ModeFailClosed:
		err = fmt.Errorf("failure policy FailClosed: %w", d.cause)
	default:
		dl, ok := ctx.Deadline()
		if !ok {
			break
		}
		left := dl.Sub(e.o.clock.Now())
		if left >= d.wait {
			break
		}
		if sure, limit := e.sureWait(*d, costs); sure > left {
			why = e.waitError(sure, limit, int(e.sleeping.Load()), e.o.clock.Now())
			err = why
		} else {
			d.hoping = true
		}
	}
	if err != nil {
		e.count(*d, costs, throttle.EventRejected, d.wait, why)
	}
	return err
}

// waitTurn sleeps d.wait on the injected clock, or until ctx ends. It
// ends early at the first settlement in this process after the one
// numbered gen (taken before the decision): a permit's, Settle's of costs
// taken without one, or the landing of give-backs that another call
// carried, any of which may give tokens back, so that the caller decides
// again with what that gave.
func (e *engine) waitTurn(ctx context.Context, d decision, gen uint64) error {
	ch, now := e.est.changed()
	if now != gen {
		return nil
	}
	settled := ch
	wait := d.wait
	if d.tried != nil {
		// The try ends within its call timeout; the timer only bounds
		// the wait should its end not be heard.
		wait = max(wait, e.o.callTimeout)
	}
	t := e.o.clock.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.Chan():
	case <-settled:
	case <-d.tried:
	}
	return nil
}

// count records a final decision and reports it to the observer, with
// why, the explanation of its wait (nil for a call served at once).
func (e *engine) count(d decision, costs []int64, kind throttle.EventKind, wait time.Duration, why *throttle.WaitError) {
	cause := d.cause
	if d.reset {
		cause = ErrStateReset
	}
	e.st.decisions.Add(1)
	if kind == throttle.EventGranted {
		e.st.granted.Add(1)
	}
	if d.mode == ModeLease {
		e.st.leaseServed.Add(1)
	}
	if d.mode.Failure() {
		e.st.failureDecisions.Add(1)
		if kind == throttle.EventGranted {
			e.st.failureGranted.Add(1)
		}
	}
	if e.o.obs == nil {
		return
	}
	for i, c := range costs {
		if c > 0 {
			e.o.obs.Observe(Event{Event: throttle.Event{Kind: kind, Limit: e.limits[i].name, Cost: c, Wait: wait, Why: why},
				Mode: d.mode, Err: cause})
		}
	}
}
