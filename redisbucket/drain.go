package redisbucket

import (
	"context"
	"time"
)

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
// nothing; a pause past MaxPause from now is cut to MaxPause. It makes one
// Redis call under the call timeout; when Redis is unavailable it changes
// nothing (the failure policy decides meanwhile). With PauseUntil and
// Lower, a Limiter is a throttle.Pauser and a throttle.Leveler.
func (l *Limiter) PauseUntil(t time.Time) {
	d := t.Sub(l.e.o.clock.Now())
	if d <= 0 {
		return
	}
	l.e.drain(context.Background(), min(d, MaxPause), nil, nil)
}

// Lower brings limit i (in cost order) down to at most remaining tokens
// for every process on the Limiter's id, as a server's count of what is
// left says: it never raises a level, and never lowers one below a debt
// of one capacity. An i out of range changes nothing; so does a Redis that
// is unavailable.
func (l *Limiter) Lower(i int, remaining int64) {
	n := len(l.e.limits)
	if i < 0 || i >= n {
		return
	}
	a, b := make([]int64, n), make([]int64, n)
	a[i], b[i] = 1, max(remaining, -l.e.limits[i].capacity)
	l.e.drain(context.Background(), 0, a, b)
}

// drain runs the script's mode d: limits with a[i] = 1 lowered to at most
// b[i], and a pause of d (rounded up to the µs) when d > 0. nil a and b
// lower nothing but what the pause does.
func (e *engine) drain(ctx context.Context, d time.Duration, a, b []int64) {
	n := len(e.limits)
	if a == nil {
		a, b = make([]int64, n), make([]int64, n)
	}
	us := int64((d + time.Microsecond - 1) / time.Microsecond)
	// An error or an open breaker leaves Redis as it was; there is nothing
	// the caller, a response being read, could do about it.
	e.attempt(ctx, e.o.clock.Now(), "d", "", a, b, us, e.o.permitTTL)
}
