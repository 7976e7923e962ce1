package redisbucket

import (
	"context"
	"time"
)

// The Limiter's methods that a server's responses drive, through the HTTP
// Transport or by hand: a pause (throttle.Pauser), a count of what is
// left (throttle.Leveler) and a size of the quota (throttle.Tuner). Each
// is one script call that applies the server's word for every process on
// the Limiter's id; drain.go and tune.go hold the engine's side.

// MaxPause is the longest pause a Limiter stores in Redis: the stored
// state's instant may run at most a minute ahead of the server's clock
// (further is read as garbage), which is also the HTTP Transport's default
// MaxPause.
const MaxPause = time.Minute

// PauseUntil pauses every limit until t for every process on the
// Limiter's id, as a server's 429 with Retry-After asks: every level is
// lowered to at most 0 and nothing refills before t, so the limits are
// released at their rates from empty when the pause ends, in every
// process at once, each seeing it on its next decision (within one round
// trip). A later pause extends an earlier one; an earlier one changes
// nothing; a pause past MaxPause from now is cut to MaxPause. A limit
// already in debt stays there (the level is lowered, never raised), and a
// limit that runs at a server's lower quota (Tune) is refilled over the
// pause at that quota instead of released from empty. It makes one Redis
// call under the call timeout. When Redis is unavailable only this
// process pauses: under FailLocal its local buckets pause until t; other
// processes, and this one under FailOpen, go on. With PauseUntil and
// Lower, a Limiter is a throttle.Pauser and a throttle.Leveler. levels,
// what a server that refused a call says is left, change nothing: the
// pause already empties every level, and a level the fleet shares is
// never raised by one process. A cause told for t before (Observe) is the
// pause's Cause, published with its end to the processes that hear the
// pause feed (every process with reservations, the default).
func (l *Limiter) PauseUntil(t time.Time, _ ...int64) {
	e := l.e
	d := t.Sub(e.o.clock.Now())
	if d <= 0 {
		return
	}
	cause := e.causes.take(t)
	res, us, ok := e.drain(context.Background(), min(d, MaxPause), nil, nil)
	if !ok || res.paused <= 0 {
		return
	}
	from := res.now // where this pause moved the fleet's queue from
	if !e.causes.stored(t, res.paused, res.now, us) {
		// A longer pause was in force: its cause, if any, stands, and
		// where it was stored from is not known here.
		cause, from = "", 0
	}
	if cause != "" {
		e.pz.told(res.paused, cause)
	}
	e.publishPause(res.paused, from, cause)
}

// Lower brings limit i (in cost order) down to at most remaining tokens
// for every process on the Limiter's id, as a server's count of what is
// left says: it never raises a level, and never lowers one below a debt
// of one capacity. An i out of range changes nothing. It makes one Redis
// call, none when the levels this process last heard, refilled since, are
// already at or below remaining (another process's give-back since may
// have raised the level above that: the next report lowers it). When Redis is
// unavailable it lowers only this process's FailLocal bucket, to its share
// of remaining.
func (l *Limiter) Lower(i int, remaining int64) {
	n := len(l.e.limits)
	if i < 0 || i >= n {
		return
	}
	if l.e.br.openUntil().IsZero() {
		// The level can be no higher than the last reply's, refilled
		// since: a report at or above that lowers nothing, and most
		// responses report more than a busy fleet has left.
		if most, ok := l.e.seen.most(l.e.limits[i], i, l.e.o.clock.Now()); ok && most <= remaining {
			return
		}
	}
	a, b := make([]int64, n), make([]int64, n)
	a[i], b[i] = 1, max(remaining, -l.e.limits[i].capacity)
	l.e.drain(context.Background(), 0, a, b)
}

// TuneTTL is how long a server's lower quota, stored by Tune, outlives the
// last report of it: a fleet that stops hearing it (a vendor that drops
// its headers) returns to its configuration then.
const TuneTTL = 10 * time.Minute

// TuneHold is how long a server's lower quota stands before a higher one
// (or the configuration) replaces it: responses the server sent before it
// lowered its quota may still arrive, with the old limit, a few round
// trips after the first that has the new one.
const TuneHold = 5 * time.Second

// Tune tells the Limiter that the server allows limit tokens every window
// on limit i (in cost order), as OpenAI's x-ratelimit-limit-requests (a
// minute's) or an IETF RateLimit-Policy says; it makes the Limiter a
// throttle.Tuner. When that is below the limit's configured rate, the
// limit is lowered for every process on the Limiter's id, atomically in
// Redis: its rate to limit per window, its capacity in the same
// proportion (at least 1), its level capped at that capacity; every
// process reads it with its next decision. A cost above the lowered
// capacity (but within the configured one) waits for a full bucket. While
// the lowered quota holds, a pause (PauseUntil) refills the limit over
// the pause at that quota, as the server does, instead of releasing it
// from empty: the fleet goes on at the pause's end with what the server
// banked, no more.
//
// A report at or above the configured rate restores the configuration,
// and one above a lowered quota raises it, both only once the lowered
// quota has stood for TuneHold. A lowered quota lasts TuneTTL after its
// last report. A process sends a report to Redis only when it differs
// from what it sent last, or the last is a quarter of TuneTTL old, or the
// last reply said the limit is not lowered: a report on every response
// costs a Redis call once per change. An i out of range, a non-positive
// limit or window, or a Redis that is unavailable changes nothing.
func (l *Limiter) Tune(i int, limit int64, window time.Duration) {
	l.e.tune(&l.tm, i, limit, window)
}
