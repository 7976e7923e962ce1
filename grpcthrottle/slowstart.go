package grpcthrottle

import (
	"context"
	"math"
	"sync"
	"sync/atomic"

	"github.com/throttlekit/throttle"
)

// slowStart holds a Client's first unary calls to what its servers have
// confirmed: the burst a Gate is configured with is a claim about the
// server that no answer has checked yet, and a burst sent whole reaches a
// server that allows less before its first refusal can come back. Half
// the burst (in calls) goes first; each success lets half of what is left
// unconfirmed follow; the first refusal, a confirmed whole burst or
// maxSlowStart successes end it, and the Gate alone decides from then on
// (the congestion control takes a refusal from there). It is the Client's, not each Gate's, so
// that it costs no memory per key: under PerKey only the first calls of
// the Client are held.
type slowStart struct {
	done atomic.Bool // the fast path: nothing held once it is set

	mu        sync.Mutex
	burst     int64         // in calls, of the first Gate seen; 0 before
	sent      int64         // calls let through
	allowed   int64         // calls let through so far at most
	confirmed int64         // successes heard
	more      chan struct{} // closed when allowed grows or it ends
}

// maxSlowStart bounds the successes a slow start lasts: past it, a burst
// larger still is let through whole, so that a Gate of a burst too large
// to send at once pays the slow start's lock on a bounded number of calls.
const maxSlowStart = 1024

// enter waits until a call of costs on g may be sent, or ctx ends.
func (s *slowStart) enter(ctx context.Context, g throttle.Gate, costs []int64) error {
	for {
		if s.done.Load() {
			return nil
		}
		s.mu.Lock()
		if s.burst == 0 {
			s.begin(g, costs)
		}
		if s.done.Load() || s.sent < s.allowed {
			s.sent++
			s.mu.Unlock()
			return nil
		}
		more := s.more
		s.mu.Unlock()
		select {
		case <-more:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// begin sets the burst, in calls, from g's capacities and costs: the
// fewest calls of costs any of its limits holds. s.mu is held.
func (s *slowStart) begin(g throttle.Gate, costs []int64) {
	s.burst = math.MaxInt64
	for i, l := range g.Limits() {
		if i < len(costs) && costs[i] > 0 {
			s.burst = min(s.burst, max(l.Capacity/costs[i], 1))
		}
	}
	if s.burst <= 2 || s.burst == math.MaxInt64 {
		s.end() // nothing to hold back
		return
	}
	s.allowed = (s.burst + 1) / 2
	s.more = make(chan struct{})
}

// heard tells s of an answer to a call it let through: a success (ok)
// lets half of the unconfirmed rest follow; a refusal ends it.
func (s *slowStart) heard(ok bool) {
	s.update(func() {
		if !ok {
			s.end()
			return
		}
		s.confirmed++
		rest := s.burst - s.confirmed
		if rest <= 1 || s.confirmed >= maxSlowStart {
			s.end()
			return
		}
		if a := s.confirmed + (rest+1)/2; a > s.allowed {
			s.allowed = a
			s.wake()
		}
	})
}

// leave takes back a call enter let through that was not sent after all
// (its Gate refused it): it will not be answered, so its place goes to
// the next.
func (s *slowStart) leave() {
	s.update(func() {
		s.sent--
		s.wake()
	})
}

// update runs f with s.mu held, unless s has ended.
func (s *slowStart) update(f func()) {
	if s.done.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done.Load() {
		f()
	}
}

// wake lets the calls waiting in enter look again. s.mu is held.
func (s *slowStart) wake() {
	close(s.more)
	s.more = make(chan struct{})
}

// end lets every call through from now on. s.mu is held.
func (s *slowStart) end() {
	s.done.Store(true)
	if s.more != nil {
		close(s.more)
		s.more = nil
	}
}
