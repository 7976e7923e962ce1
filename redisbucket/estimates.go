package redisbucket

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Which waits are certain.
//
// Acquire refuses before its deadline (a *throttle.WaitError, at once,
// nothing taken) only on a wait that is certain: a pause stored in Redis,
// or exact arithmetic on settled levels. The costs that this process's
// permits took from Redis and have not settled are estimates (an LLM
// call's prompt plus max_tokens, settled to what it used): a wait that
// their settlements could shorten waits its turn instead, is decided
// again as each of them settles, and ends with the context's error if
// its deadline comes first. What is certain of such a wait is its least:
// the pause in force, then the time the limit's configured rate takes to
// refill what the costs need beyond the level and everything this
// process's unsettled permits could give back, as if each used nothing.
// Permits other processes hold are not known here: their costs count as
// settled.

// estimates counts, per limit, the costs that this process's permits
// took from Redis and have not settled, Cancelled or dropped: what their
// settlements could give back.
type estimates struct {
	mu   sync.Mutex
	held []int64
	ch   chan struct{} // closed at the next settlement; nil until asked for
	gen  atomic.Uint64 // settlements so far
	n    atomic.Int64  // permits held
}

// heldPermit is one permit's entry in estimates, released once: when the
// permit settles, or when it is dropped unsettled (garbage collected),
// whose costs then stand as used.
type heldPermit struct {
	est   *estimates
	costs []int64
	done  atomic.Bool
}

// hold books costs for p, a permit taken from Redis.
func (s *estimates) hold(p *Permit, costs []int64) {
	s.mu.Lock()
	if s.held == nil {
		s.held = make([]int64, len(costs))
	}
	for i, c := range costs {
		s.held[i] += c
	}
	s.mu.Unlock()
	s.n.Add(1)
	h := &heldPermit{est: s, costs: costs}
	p.held = h
	runtime.AddCleanup(p, (*heldPermit).release, h)
}

// release ends h's booking and wakes the waits that rest on it.
func (h *heldPermit) release() {
	if !h.done.CompareAndSwap(false, true) {
		return
	}
	s := h.est
	s.mu.Lock()
	for i, c := range h.costs {
		s.held[i] -= c
	}
	s.gen.Add(1)
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	s.mu.Unlock()
	s.n.Add(-1)
}

// settled wakes the waits, as a permit's release does, for a settlement
// of costs taken without a permit (Limiter.Settle), and for give-backs
// that landed in Redis after a call sent later was decided (callAt).
func (s *estimates) settled() {
	s.mu.Lock()
	s.gen.Add(1)
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	s.mu.Unlock()
}

// unsettled returns what the permits held on limit i could give back.
func (s *estimates) unsettled(i int) int64 {
	if s.n.Load() == 0 {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.held) {
		return 0
	}
	return s.held[i]
}

// changed returns a channel closed at the next settlement, and the
// settlements so far.
func (s *estimates) changed() (<-chan struct{}, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch, s.gen.Load()
}

// sureWait returns the part of d's wait that is certain and the limit it
// binds on: d's own when no cost could be given back by this process's
// unsettled permits, or when the failure policy decided. Otherwise the
// pause in force, then the refill at each limit's configured rate (a
// lowered quota refills slower) of what the costs need beyond the level
// and what those permits could give back, at most the capacity, counted
// down to the µs (the script counts from the start of a coarser unit).
func (e *engine) sureWait(d decision, costs []int64) (time.Duration, int) {
	if d.mode != ModeRedis || d.levels == nil {
		return d.wait, d.limit
	}
	back := make([]int64, len(costs))
	some := false
	for i, c := range costs {
		if c > 0 {
			back[i] = e.est.unsettled(i)
			some = some || back[i] > 0
		}
	}
	if !some {
		return d.wait, d.limit
	}
	var pause time.Duration
	if d.paused > d.at {
		pause = time.Duration(d.paused-d.at) * time.Microsecond
	}
	sure, limit := pause, d.limit
	tuned := e.tuned.Load()
	for i, l := range e.limits {
		c := costs[i]
		if c <= 0 {
			continue
		}
		tok, rem := d.levels[2*i], d.levels[2*i+1]
		if d.wholeOnly {
			rem = l.den - 1 // the reply left the fraction out: at most this
		}
		if tok+min(back[i], 2*l.capacity) >= l.capacity {
			tok, rem = l.capacity, 0
		} else {
			tok += back[i]
		}
		if tok >= c {
			continue
		}
		w := time.Duration(1<<63 - 1)
		if l.num > 0 {
			w = time.Duration(l.refill((c-tok)*l.den-rem)-(l.unit-1)) * time.Microsecond
		}
		// A limit at a server's quota refills over a pause; others from
		// its end. (Beyond the 50 limits the reply marks, the shorter.)
		if i < 50 && tuned&(1<<i) == 0 {
			w = satAddDur(pause, w)
		}
		if w > sure {
			sure, limit = w, i
		}
	}
	return sure, limit
}

// satAddDur adds two non-negative durations, saturating.
func satAddDur(a, b time.Duration) time.Duration {
	if a > 1<<63-1-b {
		return 1<<63 - 1
	}
	return a + b
}
