package redisbucket

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/jonboulle/clockwork"
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
// policy decides (the breaker open, the call failed), and while a limit
// runs at a server's quota (Tune), it falls back to acquire, which decides
// step by step.
func (e *engine) acquireQueued(ctx context.Context, costs []int64, permit string, dec func(context.Context) (decision, error)) (decision, error) {
	if err := e.check(costs); err != nil {
		return decision{}, err
	}
	if !e.o.reserve || e.tuned.Load() != 0 {
		// A server's quota is in force: it may change again with any
		// response, and instants handed out now would not follow it.
		// Deciding after each sleep follows it.
		return e.acquire(ctx, costs, permit, dec)
	}
	a := asked{start: e.o.clock.Now()}
	// all is what the caller asked for; costs, what is still to take: a
	// reservation may leave a limit to its instant (reserveLater), and
	// the loop then goes round once more for it, with no permit (the
	// permit key remembers the first) and a decision of its own.
	all := costs
	for {
		now := e.o.clock.Now()
		gen := e.est.gen.Load()
		most := maxReserveWait
		if dl, ok := ctx.Deadline(); ok {
			most = max(min(dl.Sub(now).Microseconds(), most), 0)
		}
		epoch, feedOK := e.feed.token()
		res, fail, _, err := e.attempt(ctx, now, modeReserve, permit, costs, nil, most, e.o.permitTTL, e.headroomArg)
		if err != nil {
			if ctxErr(ctx) != nil {
				e.count(decision{}, costs, throttle.EventCancelled, e.o.clock.Now().Sub(a.start), e.explained(&a, costs))
			}
			return decision{}, err
		}
		if fail {
			// The failure policy decides this step; the next step
			// reserves again if Redis is back. A waiter that stayed in
			// acquire would, once Redis answers, decide step by step
			// against a level that reservations keep below zero, and
			// starve until its deadline.
			d, done, err := e.step(ctx, all, &a, dec)
			if done {
				return d, err
			}
			if err := e.waitOut(ctx, d, gen, costs, &a); err != nil {
				return d, err
			}
			continue
		}
		d := e.fromResult(res, costs)
		if !d.granted {
			// Never, a deadline the instant would miss, or (rarely) a
			// queue at its deepest: then the wait is until the costs are
			// covered outright, and the next call reserves.
			d.wait = max(d.wait, time.Microsecond)
			e.refused(&a, d, costs)
			if err := e.hopeless(ctx, &d, costs); err != nil {
				return d, err
			}
			if err := e.waitOut(ctx, d, gen, costs, &a); err != nil {
				return d, err
			}
			continue
		}
		took, later := e.reserveLater(res, costs)
		if res.wait > 0 {
			e.reserved(&a, res, res.wait, took)
			e.openFeed()
			e.sleeping.Add(1)
			err := e.sleepReserved(ctx, res, epoch, feedOK)
			e.sleeping.Add(-1)
			if err != nil {
				e.giveBack(ctx, res, took, permit)
				e.count(d, all, throttle.EventCancelled, e.o.clock.Now().Sub(a.start), a.why)
				return d, err
			}
		}
		if later != nil {
			// If this take is cancelled, what the reservation took stays
			// spent: its instant has come, and nothing reserved behind it
			// could be given back.
			costs, permit = later, ""
			dec = func(ctx context.Context) (decision, error) { return e.decide(ctx, later, "") }
			continue
		}
		e.count(d, all, throttle.EventGranted, e.o.clock.Now().Sub(a.start), a.why)
		return d, nil
	}
}

// reserveLater splits the costs of a granted reservation into those it
// took and those it left to be taken at its instant (the reply's amount
// marks their limits: bucket.lua's mode r); later is nil when it took
// them all.
func (e *engine) reserveLater(res result, costs []int64) (took, later []int64) {
	if res.amount == 0 {
		return costs, nil
	}
	took, later = slices.Clone(costs), make([]int64, len(costs))
	for i := range costs {
		if res.leftLater(i) {
			took[i], later[i] = 0, costs[i]
		}
	}
	return took, later
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
	if res.status == statusGranted {
		at = strconv.FormatInt(res.now, 10)
	}
	extra = append(extra, at)
	for i := range e.limits {
		extra = append(extra, res.levels[2*i], res.levels[2*i+1])
	}
	// The error is in Stats (CallErrors) and changes nothing here.
	_, _ = e.call(context.WithoutCancel(ctx), modeCancel, permit, costs, nil, 1, e.o.permitTTL, extra...)
}

// heardFresh is how recent a reply must be for a waking sleeper to trust
// that no pause was stored since: about the longest loopback round trip
// under load. A staler process asks once (confirm) before it goes.
const heardFresh = time.Millisecond

// sleepReserved sleeps until a reservation's instant: res.wait after the
// reply, on the injected clock. A pause this process hears of meanwhile
// that ends after the reservation was made, and that the reservation's
// own reply did not carry, was stored after it. While no limit runs at a
// server's quota the pause holds the refill too, so the reservation's
// instant moves by the pause's length (a bound: the pause may have begun
// after the reservation); while one does, the script refills it over the
// pause as the server does, so the instant stays and only the pause's end
// holds it. A rate this process lowers meanwhile (Tune) stretches what
// remains of the wait in proportion, since the queue ahead drains at the
// new rate. A process that has heard nothing from Redis for longer than
// heardFresh when the instant comes asks once, so that a pause another
// process stored meanwhile holds this caller too, unless the pause feed
// (pausefeed.go) was live throughout: it hears of such a pause as it is
// stored. epoch and feedOK are the feed's token from before the
// reservation was sent.
func (e *engine) sleepReserved(ctx context.Context, res result, epoch uint64, feedOK bool) error {
	s := sleeper{base: e.rc.base(res.now, res.sent, e.o.clock.Now()), own: res.wait, res: res, applied: max(res.paused, res.now),
		back: make([]int64, len(e.limits))}
	_, s.gen, _, _, _ = e.pz.get()
	target := s.own
	t := e.o.clock.NewTimer(target)
	defer t.Stop()
	e.arm(t, s.base.Add(target))
	fired := false // the timer fired and the target still holds the caller
	for {
		next, changed := s.target(e)
		if s.sooner(e, next) {
			// Its landing closes changed: no loop while it cannot land.
			e.carryBacks(ctx)
		}
		if next != target || fired {
			target, fired = next, false
			e.arm(t, s.base.Add(target))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
			continue
		case <-t.Chan():
		}
		if e.o.clock.Since(s.base) < target {
			// A fire from before the target moved: Reset does not
			// take back a fire already in the timer's channel (a fake
			// clock's expiry is a send into a buffer of one), and a
			// pause heard as the timer fired may lose the select to it.
			e.arm(t, s.base.Add(target))
			continue
		}
		if feedOK && e.feed.heldSince(epoch) {
			// Subscribed to the fleet's pauses since before the
			// reservation was sent: any pause stored since has reached
			// e.pz (and moved the target) but for one in transit.
			return nil
		}
		if e.o.clock.Since(time.Unix(0, e.heard.Load())) <= heardFresh {
			return nil
		}
		e.confirm(ctx)
		// A pause that came with the answer and ends after this
		// reservation was made may move the target; otherwise the
		// caller goes. The timer has fired: it is armed again even if
		// the target stays (a pause held under Tune may end before it),
		// or nothing would wake the caller.
		if again, _, _, _, _ := e.pz.get(); again <= s.applied {
			return nil
		}
		fired = true
	}
}

// armSlack is how far the clock may move between reading it and arming a
// timer before arm reads it again: far below what a grant's instant is
// worth on the wire, far above a read, a Reset and a read on a real clock.
const armSlack = 50 * time.Microsecond

// arm sets t to fire at the instant at. A timer takes a duration, which
// counts from the clock as the timer reads it: if the clock moved after
// this read it (an Advance of a fake clock, a preemption), the timer would
// fire that much late, and a sleeper that only re-arms when its target
// moves would sleep past its instant, so the arming is repeated until the
// clock stood still across it.
func (e *engine) arm(t clockwork.Timer, at time.Time) {
	for {
		now := e.o.clock.Now()
		t.Reset(at.Sub(now))
		if e.o.clock.Since(now) <= armSlack {
			return
		}
	}
}

// sleeper is what a reserved sleeper knows of its instant, all after
// base: the reservation's own instant (stretched by Tune), what pauses
// added to it, how soon this process's give-backs since cover it, and the
// end of the latest pause that holds it.
type sleeper struct {
	base                    time.Time
	own, shift, hold, cover time.Duration
	res                     result
	applied, gen            int64
	// back sums per limit the give-backs applied after the reservation
	// (numbered after res.seq), from the one recorded as nextBack on, and
	// cover is when they cover the reservation, once covered; stretched
	// stops it once Tune has stretched own, which its arithmetic does not
	// follow.
	back      []int64
	nextBack  int
	covered   bool
	stretched bool
}

// target folds the pauses and rate changes heard since the last look into
// the sleeper's instant and returns it, with the channel that closes on
// the next change.
func (s *sleeper) target(e *engine) (time.Duration, <-chan struct{}) {
	until, g, factor, at, changed := e.pz.get()
	if until > s.applied {
		if e.tuned.Load() != 0 {
			s.hold = time.Duration(until-s.res.now) * time.Microsecond
		} else {
			// The script moved the queue's refill from the instant the
			// pause was stored to its end: every reserved instant moves
			// by that, not by the end less this reservation's time, which
			// put a sleeper reserved before the pause later than Redis
			// counts it, and Redis, its queue drained, then granted a
			// burst while such sleepers were still to go. Unknown (a
			// reply's pause), the reservation's time: later, never early.
			from := max(e.pz.fromOf(until), s.applied)
			s.shift += time.Duration(until-from) * time.Microsecond
		}
		s.applied = until
	}
	if g != s.gen {
		s.gen = g
		if left := s.own - at.Sub(s.base); left > 0 {
			s.own = at.Sub(s.base) + time.Duration(float64(left)*factor)
			s.stretched = true
		}
	}
	if !s.stretched && e.tuned.Load() == 0 {
		// Settlements this process carried back after the reservation
		// raised the level its queue drains from: the instant comes when
		// that level covers it, if sooner (a pause stored since still
		// adds to it). Other processes' give-backs are not heard: their
		// sleepers' instants hold, later than need be, never early.
		if n := e.pz.backsAfter(s.res.seq, s.nextBack, s.back); n != s.nextBack {
			s.nextBack = n
			if c, ok := e.backCover(s.res, s.back); ok {
				s.cover, s.covered = c, true
			}
		}
	}
	own := s.own
	if s.covered && !s.stretched {
		own = min(own, s.cover)
	}
	return max(own+s.shift, s.hold), changed
}

// sooner says whether the give-backs this process has not sent yet would
// bring the sleeper's instant before target.
func (s *sleeper) sooner(e *engine, target time.Duration) bool {
	if s.stretched || e.tuned.Load() != 0 {
		return false
	}
	g := slices.Clone(s.back)
	if !e.seen.pending(g) {
		return false
	}
	c, ok := e.backCover(s.res, g)
	return ok && c+s.shift < target
}

// confirm reads the limiter's state once (mode p, no cost), for the pause
// its reply carries. An error leaves things as they were: the breaker and
// the failure policy take the next decisions.
func (e *engine) confirm(ctx context.Context) {
	_, _, _, _ = e.attempt(ctx, e.o.clock.Now(), modePeek, "", make([]int64, len(e.limits)), nil, 1, e.o.permitTTL)
}
