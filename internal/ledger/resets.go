package ledger

import (
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// Resets schedules, for limits whose server quota ends a window, the
// return of the server's level at the window's end.
//
// A server that restores its quota at once at the end of a window
// (GitHub's x-ratelimit-reset) has its whole limit again then; a limit
// emptied by its "remaining: 0" would otherwise refill at its configured
// rate, one call every 0.72 s at 5,000 an hour, long after the server
// reset. The level comes back through a Taker's Settle.
type Resets struct {
	mu      sync.Mutex
	pending map[Ref]reset
}

// reset is a raise to come: n tokens at the instant at.
type reset struct {
	n  int64
	at time.Time
}

// At raises limit i of g, a Taker of n limits, by tokens (never above its
// capacity) after d on clock, unless a raise is already pending for it.
func (w *Resets) At(g throttle.Gate, tk throttle.Taker, n, i int, tokens int64, d time.Duration, clock clockwork.Clock) {
	r := Ref{g, i}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.pending[r]; ok {
		return
	}
	if w.pending == nil {
		w.pending = make(map[Ref]reset)
	}
	w.pending[r] = reset{n: tokens, at: clock.Now().Add(d)}
	back, none := make([]int64, n), make([]int64, n)
	back[i] = tokens
	clock.AfterFunc(d, func() {
		// The tokens go in before the raise stops being pending, both
		// under the lock: a deadline decision, which reads Due before the
		// limit, sees the raise to come or its tokens, never neither.
		w.mu.Lock()
		defer w.mu.Unlock()
		tk.Settle(back, none)
		delete(w.pending, r)
	})
}

// Due reports the raise to come for limit r, if any: the calls queued
// behind an emptied limit are served at the reset, not at its rate.
func (w *Resets) Due(r Ref) (n int64, at time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[r]
	return p.n, p.at, ok
}
