package redisbucket

import (
	"context"
	"slices"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// A Limiter is a throttle.Gate (gate_test.go): the HTTP Transport,
// Handler and the gRPC interceptors take it as they take an
// in-process throttle.Limiter, and every process on the same id shares its
// limits.

// Clock returns the clock the Limiter measures local waits and pauses on
// (WithClock; the real clock by default), so that the HTTP Transport reads
// a server's "wait" on the same time line as PauseUntil converts it.
func (l *Limiter) Clock() clockwork.Clock { return l.e.o.clock }

// TryAcquirePermit is TryAcquire returning the Permit for the costs taken,
// a *Permit; p is nil when ok is false.
func (l *Limiter) TryAcquirePermit(costs ...int64) (p throttle.Permit, ok bool, err error) {
	return l.TryAcquirePermitContext(context.Background(), costs...)
}

// TryAcquirePermitContext is TryAcquirePermit with a context for the
// Redis call.
func (l *Limiter) TryAcquirePermitContext(ctx context.Context, costs ...int64) (throttle.Permit, bool, error) {
	id := newPermitID()
	d, ok, err := l.e.tryDecide(ctx, costs, id)
	if !ok || err != nil {
		return nil, ok, err
	}
	return l.e.newPermit(id, costs, d.mode, nil), true, nil
}

// Status appends the state of every limit, in cost order, to dst: the
// whole tokens left and the time until the limit is full at its rate. When
// this process heard the levels from Redis within StatusFresh, they are
// those levels refilled since at the limits' rates (at most what Redis
// holds, unless another process gave tokens back since); otherwise it is
// one read of the shared levels (no write). A failed read reports every
// limit with Remaining 0 and Reset -1: a server that cannot be read is not
// one to promise tokens from. Paused is the end of the pause in force that
// this process last heard of (a reply's, or the pause feed's), on the
// Limiter's clock, for every limit (a pause holds them all), with its
// Cause when this process stored that pause or heard its cause on the
// feed; reading them costs no call.
func (l *Limiter) Status(dst []throttle.LimitStatus) []throttle.LimitStatus {
	tokens, ok := []float64(nil), false
	if l.e.br.openUntil().IsZero() {
		tokens, ok = l.e.seen.levels(l.e.o.clock.Now(), StatusFresh)
	}
	var err error
	if !ok {
		ctx, cancel := context.WithTimeout(context.Background(), l.e.o.callTimeout)
		defer cancel()
		tokens, err = l.Tokens(ctx)
	}
	return l.status(dst, tokens, err == nil)
}

// StatusBound is Status without a call, for a caller that asks only
// whether a limit could be at its capacity: every limit as this process's
// last view of Redis bounds it, however old, refilled since at the limit's
// rate, with the give-backs no call has carried yet. Its Remaining is at
// least what Redis holds (others' takes since only lower it, and a key
// Redis lost is rebuilt from a returning process's view), but for what
// other processes gave back since, and for a key lost and then first
// reached by a process with no view, which finds it full. Without a view
// every limit is reported at
// its capacity, bounding nothing. The HTTP Transport reads it, before
// Status, to tell whether a call could open a burst from a full limit:
// a process whose calls queue behind the fleet's sees from its view that
// none can, where Status would read Redis once its view is older than
// StatusFresh.
func (l *Limiter) StatusBound(dst []throttle.LimitStatus) []throttle.LimitStatus {
	tokens, ok := l.e.seen.bound(l.e.o.clock.Now())
	if !ok {
		tokens = make([]float64, len(l.e.limits))
		for i, s := range l.e.limits {
			tokens[i] = float64(s.capacity)
		}
	}
	return l.status(dst, tokens, true)
}

// status appends the state of every limit at the levels tokens (none read
// when !read) and the pause this process knows of, as Status reports it.
func (l *Limiter) status(dst []throttle.LimitStatus, tokens []float64, read bool) []throttle.LimitStatus {
	paused, cause := l.e.pauseAt(l.e.o.clock.Now())
	for i, s := range l.e.limits {
		st := throttle.LimitStatus{Name: s.name, Capacity: s.capacity, Rate: s.rate, Reset: -1, Paused: paused, Cause: cause}
		if read {
			st.Remaining = max(int64(tokens[i]), 0)
			st.Reset = untilFull(s.capacity, tokens[i], s.rate)
		}
		dst = append(dst, st)
	}
	return dst
}

// StatusFresh is how recently a process must have heard a Limiter's
// levels from Redis for Status to report them, refilled since, without a
// call: the HTTP Transport reads Status before most calls of a process
// whose calls are spaced out, which would otherwise cost a Redis call per
// HTTP call. A level so reported is an upper bound of the shared one
// (others' takes since are not in it), the side a Transport's burst
// detection errs safely on.
const StatusFresh = 2 * time.Second

// untilFull is how long a level of tokens takes to reach capacity at r,
// rounded up to the nanosecond; -1 if it never does.
func untilFull(capacity int64, tokens float64, r throttle.Rate) time.Duration {
	missing := float64(capacity) - tokens
	if missing <= 0 {
		return 0
	}
	if r.Tokens() <= 0 || r.Period() <= 0 {
		return -1
	}
	d := missing * float64(r.Period()) / float64(r.Tokens())
	if d >= float64(1<<63-1) {
		return -1
	}
	return time.Duration(d + 0.999999)
}

// Take is Acquire without the Permit: it waits its turn under the same
// rules, takes the costs, and reports how long the call waited (on the
// Limiter's clock). With TryAcquire and Settle it makes the Limiter a
// throttle.Taker, which the HTTP Transport and the gRPC interceptors use,
// so that no Permit is left unsettled (estimates.go): the costs a Taker
// took are exact as far as this Limiter knows; a caller that settles them
// later decides about its own deadlines (the Transport does).
func (l *Limiter) Take(ctx context.Context, costs ...int64) (time.Duration, error) {
	start := l.e.o.clock.Now()
	_, err := l.e.acquireQueued(ctx, costs, "", func(ctx context.Context) (decision, error) {
		return l.e.decide(ctx, costs, "")
	})
	if err != nil {
		return 0, err
	}
	return l.e.o.clock.Since(start), nil
}

// Settle corrects costs that Take or TryAcquire took to the actual use, as
// Permit.Settle does: what was taken beyond actual goes back, never above
// a limit's capacity (all of it, with actual all zero, for a call never
// made), and what actual exceeds was taken by is charged at once, at most
// one capacity into debt (beyond, the charge stops there and the error
// matches throttle.ErrCostExceedsCapacity). A charge is one Redis call
// (retried once, under a fresh permit id that makes the retry safe) under
// the call timeout; when Redis cannot be reached it fails with an error
// wrapping ErrUnavailable and the costs stay as taken. A settlement that
// only gives back costs no call of its own: the Limiter's next Redis call,
// of any kind, carries it (a Transport's next call takes, so a process
// that calls steadily pays nothing for its settlements, where a call each
// would double its Redis calls). Until then the fleet does not see it. A
// call that carried it and failed gives it up (it may have been applied,
// and a give-back applied twice would mint tokens), as does a process
// that stops first: those tokens stay spent and refill at the rate, which
// errs on the side of the quota.
func (l *Limiter) Settle(taken, actual []int64) error {
	e := l.e
	if len(taken) != len(e.limits) {
		return costCount(len(taken), len(e.limits))
	}
	if len(actual) != len(e.limits) {
		return costCount(len(actual), len(e.limits))
	}
	back, charge := make([]int64, len(taken)), false
	for i, c := range taken {
		if c < 0 || actual[i] < 0 {
			return throttle.ErrInvalidCost
		}
		back[i] = max(c-actual[i], 0)
		charge = charge || actual[i] > c
	}
	if !charge {
		l.observeSettled(taken, actual)
		e.seen.giveBack(back)
		e.est.settled()
		if e.sleeping.Load() > 0 {
			e.pz.nudge() // a sleeper may go sooner with it (carryBacks)
		}
		return nil
	}
	p := &Permit{e: e, id: newPermitID(), costs: slices.Clone(taken), mode: ModeRedis}
	err := p.SettleContext(context.Background(), actual...)
	e.est.settled()
	return err
}

// observeSettled reports a settlement to the observer, as a permit's does.
func (l *Limiter) observeSettled(taken, actual []int64) {
	o := l.e.o.obs
	if o == nil {
		return
	}
	for i, a := range actual {
		o.Observe(Event{Event: throttle.Event{Kind: throttle.EventSettled, Limit: l.e.limits[i].name, Cost: a, Estimate: taken[i]}, Mode: ModeRedis})
	}
}

var _ throttle.Taker = (*Limiter)(nil)
