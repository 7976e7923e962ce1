package redisbucket

import (
	"context"
	"math/big"
	"sync"
	"time"

	"github.com/throttlekit/throttle"
)

// tune is Limiter.Tune; tm is what the Limiter last stored.
func (e *engine) tune(tm *tuneMemo, i int, limit int64, window time.Duration) {
	if i < 0 || i >= len(e.limits) || limit <= 0 || window <= 0 {
		return
	}
	t, lower := tunedShape(e.limits[i], limit, window)
	bit := i >= 50 || e.tuned.Load()&(1<<i) != 0
	if !lower && !bit {
		return // the limit runs at its configuration, as the server's
	}
	now := e.o.clock.Now()
	if lower && bit && tm.fresh(i, t, now) {
		return
	}
	a := make([]int64, len(e.limits))
	res, fail, _, err := e.attempt(context.Background(), now, modeTune, "", a, a, 1, e.o.permitTTL,
		i+1, t[0], t[1], t[2], t[3], TuneTTL.Milliseconds(), TuneHold.Microseconds())
	if fail || err != nil || res.status != statusGranted {
		return
	}
	if lower && e.slowTo(i, t, now) {
		// Reservations sleeping in this process and in the others were
		// timed at the configured rate (slowfeed.go).
		e.publishSlow(i, t)
	}
	tm.sent(i, t, now)
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
