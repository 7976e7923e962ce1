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
// never raised by one process.
func (l *Limiter) PauseUntil(t time.Time, _ ...int64) {
	d := t.Sub(l.e.o.clock.Now())
	if d <= 0 {
		return
	}
	l.e.drain(context.Background(), min(d, MaxPause), nil, nil)
}

// Lower brings limit i (in cost order) down to at most remaining tokens
// for every process on the Limiter's id, as a server's count of what is
// left says: it never raises a level, and never lowers one below a debt
// of one capacity. An i out of range changes nothing. When Redis is
// unavailable it lowers only this process's FailLocal bucket, to its share
// of remaining.
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
	now := e.o.clock.Now()
	// An error or an open breaker leaves Redis as it was; there is nothing
	// the caller, a response being read, could do about it.
	_, fail, _, _ := e.attempt(ctx, now, "d", "", a, b, us, e.o.permitTTL)
	if !fail || e.local == nil {
		return
	}
	// In failure mode the server's word reaches this process's FailLocal
	// buckets, which decide for it meanwhile: no other process hears it.
	if d > 0 {
		e.local.PauseUntil(now.Add(d))
	}
	for i, lb := range e.localBs {
		if a[i] == 1 {
			// Its share of what the fleet has left, as when the breaker opens.
			e.local.Lower(i, int64(float64(max(b[i], 0))*float64(lb.Status().Capacity)/float64(e.limits[i].capacity)))
		}
	}
}
