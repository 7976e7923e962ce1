package redisbucket

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/throttlekit/throttle"
)

// maxReserveWait is the longest wait a reservation may have when the
// caller has no deadline: far beyond any real wait, and an exact integer in
// the script.
const maxReserveWait = int64(1) << 52

// acquireQueued is acquire by reservation: one script call (mode r) takes
// the costs in the fleet's arrival order and returns the instant they are
// covered, and the caller sleeps locally until then. Waiting costs one
// call whatever the number of waiters in the fleet, where deciding again
// after each sleep costs one call per waiter per grant. A wait cut short by
// ctx gives the reservation back in one more call. While the failure
// policy decides (the breaker open, the call failed) it falls back to
// acquire, which decides step by step.
func (e *engine) acquireQueued(ctx context.Context, costs []int64, permit string, dec func(context.Context) (decision, error)) (decision, error) {
	if err := e.check(costs); err != nil {
		return decision{}, err
	}
	start := e.o.clock.Now()
	for {
		now := e.o.clock.Now()
		most := maxReserveWait
		if dl, ok := ctx.Deadline(); ok {
			most = max(min(dl.Sub(now).Microseconds(), most), 0)
		}
		res, fail, _, err := e.attempt(ctx, now, "r", permit, costs, nil, most, e.o.permitTTL)
		if err != nil {
			if ctxErr(ctx) != nil {
				e.count(decision{}, costs, throttle.EventCancelled, e.o.clock.Since(start))
			}
			return decision{}, err
		}
		if fail {
			return e.acquire(ctx, costs, permit, dec)
		}
		d := e.fromResult(res, costs)
		if !d.granted {
			// Never, a deadline the instant would miss, or (rarely) a
			// queue at its deepest: then the wait is until the costs are
			// covered outright, and the next call reserves.
			d.wait = max(d.wait, time.Microsecond)
			if err := e.hopeless(ctx, d, costs); err != nil {
				return d, err
			}
			if err := e.sleep(ctx, d.wait); err != nil {
				e.count(d, costs, throttle.EventCancelled, e.o.clock.Since(start))
				return d, err
			}
			continue
		}
		if res.wait > 0 {
			if err := e.sleepReserved(ctx, res); err != nil {
				e.giveBack(ctx, res, costs, permit)
				e.count(d, costs, throttle.EventCancelled, e.o.clock.Since(start))
				return d, err
			}
		}
		e.count(d, costs, throttle.EventGranted, e.o.clock.Since(start))
		return d, nil
	}
}

// sleep waits d on the injected clock, or until ctx ends.
func (e *engine) sleep(ctx context.Context, d time.Duration) error {
	t := e.o.clock.NewTimer(d)
	select {
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	case <-t.Chan():
		return nil
	}
}

// giveBack returns a reservation whose wait was cut short (mode c): the
// script gives each limit back what nobody reserved behind it since. It
// runs after the caller's context ended, so on a context of its own,
// bounded by the call timeout. A reply to a retried reservation (status 2)
// carries today's levels, not the reservation's: it gives nothing back
// but still marks the permit settled. If Redis cannot be reached the
// tokens stay spent, which errs on the side of the quota.
func (e *engine) giveBack(ctx context.Context, res result, costs []int64, permit string) {
	extra := make([]any, 0, 1+2*len(e.limits))
	at := ""
	if res.status == 1 {
		at = strconv.FormatInt(res.now, 10)
	}
	extra = append(extra, at)
	for i := range e.limits {
		extra = append(extra, res.levels[2*i], res.levels[2*i+1])
	}
	// The error is in Stats (CallErrors) and changes nothing here.
	_, _ = e.call(context.WithoutCancel(ctx), "c", permit, costs, nil, 1, e.o.permitTTL, extra...)
}

// pauses is the latest end of a pause (mode d) that a reply reported, and
// a channel closed when a later one arrives: a sleeper whose reservation
// was made before a pause hears of it without a call of its own, from
// whichever call of its process brings it.
type pauses struct {
	mu    sync.Mutex
	until int64 // server µs
	ch    chan struct{}
}

// saw records a reply's pause end (0 for none).
func (p *pauses) saw(until int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if until <= p.until {
		return
	}
	p.until = until
	if p.ch != nil {
		close(p.ch)
		p.ch = nil
	}
}

// get returns the latest pause end and a channel closed when it changes.
func (p *pauses) get() (int64, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch == nil {
		p.ch = make(chan struct{})
	}
	return p.until, p.ch
}

// heardFresh is how recent a reply must be for a waking sleeper to trust
// that no pause was stored since: about the longest loopback round trip
// under load. A staler process asks once (confirm) before it goes.
const heardFresh = time.Millisecond

// sleepReserved sleeps until a reservation's instant: res.wait after the
// reply, on the injected clock. A pause this process hears of meanwhile
// that ends after the reservation was made, and that the reservation's
// own reply did not carry, was stored after it: the reservation's tokens
// are covered only after the pause, so its wait starts again at the
// pause's end (a bound, since the pause may have begun after the
// reservation). A process that has heard nothing from Redis for longer
// than heardFresh when the instant comes asks once, so that a pause
// another process stored meanwhile holds this caller too.
func (e *engine) sleepReserved(ctx context.Context, res result) error {
	base := e.o.clock.Now()
	target := res.wait // after base
	t := e.o.clock.NewTimer(target)
	defer t.Stop()
	for {
		until, changed := e.pz.get()
		if until > res.now && until > res.paused {
			if moved := time.Duration(until-res.now)*time.Microsecond + res.wait; moved > target {
				target = moved
				t.Reset(target - e.o.clock.Since(base))
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
			continue
		case <-t.Chan():
		}
		if e.o.clock.Since(time.Unix(0, e.heard.Load())) <= heardFresh {
			return nil
		}
		e.confirm(ctx)
		again, _ := e.pz.get()
		if again == until {
			return nil
		}
		// A pause came with the answer: the loop moves the target past
		// it (the timer has fired, so Reset re-arms it) or, if it ended
		// before this reservation was made, lets the caller go.
		if again <= res.now || again <= res.paused {
			return nil
		}
	}
}

// confirm reads the limiter's state once (mode p, no cost), for the pause
// its reply carries. An error leaves things as they were: the breaker and
// the failure policy take the next decisions.
func (e *engine) confirm(ctx context.Context) {
	_, _, _, _ = e.attempt(ctx, e.o.clock.Now(), "p", "", make([]int64, len(e.limits)), nil, 1, e.o.permitTTL)
}
