package redisbucket

import (
	"context"
	"math/big"
	"sync"
	"time"

	"github.com/throttlekit/throttle"
)

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
	e := l.e
	if i < 0 || i >= len(e.limits) || limit <= 0 || window <= 0 {
		return
	}
	t, lower := tunedShape(e.limits[i], limit, window)
	bit := i >= 50 || e.tuned.Load()&(1<<i) != 0
	if !lower && !bit {
		return // the limit runs at its configuration, as the server's
	}
	now := e.o.clock.Now()
	if lower && bit && l.tm.fresh(i, t, now) {
		return
	}
	a := make([]int64, len(e.limits))
	res, fail, _, err := e.attempt(context.Background(), now, "t", "", a, a, 1, e.o.permitTTL,
		i+1, t[0], t[1], t[2], t[3], TuneTTL.Milliseconds(), TuneHold.Microseconds())
	if fail || err != nil || res.status != 1 {
		return
	}
	if lower && !l.tm.known(i, t) {
		// Reservations sleeping in this process were timed at the
		// configured rate: the queue ahead of them drains at this one.
		cfg := e.limits[i]
		old := float64(cfg.num) / float64(cfg.den*cfg.unit)
		if f := old / (float64(t[1]) / float64(t[2]*t[3])); f > 1 {
			e.pz.slowed(f, now)
		}
	}
	l.tm.sent(i, t, now)
}

// tunedShape is what mode t stores for a server's limit tokens every
// window on s: capacity, num, den and unit, lower true, when that is
// below s's rate; zeros and false otherwise, or when the lowered rate
// cannot be counted exactly. The rate is counted with s's capacity as
// newShape would (a cost within it may run into a debt below the lowered
// capacity), the capacity scaled as the rate, at least 1.
func tunedShape(s shape, limit int64, window time.Duration) (t [4]int64, lower bool) {
	lp := new(big.Int).Mul(big.NewInt(limit), big.NewInt(int64(s.rate.Period())))
	tw := new(big.Int).Mul(big.NewInt(s.rate.Tokens()), big.NewInt(int64(window)))
	if lp.Cmp(tw) >= 0 {
		return t, false
	}
	c := new(big.Int).Mul(big.NewInt(s.capacity), lp)
	c.Quo(c, tw)
	r, err := newShape(s.name, s.capacity, throttle.Per(limit, window))
	if err != nil {
		return t, false
	}
	return [4]int64{max(c.Int64(), 1), r.num, r.den, r.unit}, true
}

// tuneMemo is what a Limiter last stored by Tune, per limit.
type tuneMemo struct {
	mu   sync.Mutex
	last map[int]tuneSent
}

type tuneSent struct {
	shape [4]int64
	at    time.Time
}

// fresh reports whether shape t was stored for limit i less than a
// quarter of TuneTTL before now.
func (m *tuneMemo) fresh(i int, t [4]int64, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.last[i]
	return ok && s.shape == t && now.Sub(s.at) < TuneTTL/4
}

// known reports whether limit i was last tuned to t by this process.
func (m *tuneMemo) known(i int, t [4]int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.last[i]
	return ok && s.shape == t
}

func (m *tuneMemo) sent(i int, t [4]int64, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[int]tuneSent{}
	}
	m.last[i] = tuneSent{t, now}
}
