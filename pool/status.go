package pool

import (
	"math"
	"math/big"
	"time"

	"github.com/throttlekit/throttle"
)

// Status appends the state of the pool's limits, in Limits order, to dst:
// what a server answering for the pool (Handler's IETF RateLimit
// fields, the gRPC interceptors' metadata) and the status page report.
// Each limit is the sum over the members that can serve now or later —
// out of quarantine, and Meters (a member that is no Meter cannot be
// counted, and is left out) — of their Capacity, Remaining (none for a
// paused member: nothing of it serves before its pause ends), Rate,
// Waiting and Level; Reset is the longest of theirs (the pool is full
// again when the last of them is); Oldest is the longest wait queued on any. The pool
// is paused only while every such member is: Paused is then the earliest
// end, the first instant a member serves again, with that member's Cause.
// With no member counted, a limit reports the first member's capacity and
// rate with nothing left and no reset, as an exhausted quota. Status moves
// nothing.
//
// A Pool is a Meter but no Pauser or Leveler: a server's answer concerns
// the member that sent the call, and httpthrottle's Transport tells that
// member (see WithRoutes); to stop the whole pool, pause its members.
func (p *Pool) Status(dst []throttle.LimitStatus) []throttle.LimitStatus {
	now := p.clock.Now()
	base := len(dst)
	for _, l := range p.limits {
		dst = append(dst, throttle.LimitStatus{Name: l.Name, Capacity: l.Capacity, Rate: l.Rate, Reset: -1})
	}
	out := dst[base:]
	var buf [4]throttle.LimitStatus
	counted, paused := 0, true
	for _, m := range p.members {
		if m.meter == nil || p.Quarantined(m.Name).After(now) {
			continue
		}
		st := m.meter.Status(buf[:0])
		if len(st) != len(out) {
			continue
		}
		mp := anyPaused(st)
		for i := range out {
			if mp {
				st[i].Remaining = 0 // none of it serves before the pause ends
			}
			add(&out[i], &st[i], counted == 0)
		}
		paused = paused && mp
		counted++
	}
	if counted == 0 || !paused {
		for i := range out {
			out[i].Paused, out[i].Cause = time.Time{}, ""
		}
	}
	return dst
}

// add adds member m's state of one limit to the pool's, s; first is m the
// first member counted.
func add(s, m *throttle.LimitStatus, first bool) {
	if first {
		*s = *m
		return
	}
	s.Capacity = satAdd(s.Capacity, m.Capacity)
	s.Remaining = satAdd(s.Remaining, m.Remaining)
	s.Rate = sumRate(s.Rate, m.Rate)
	s.Reset = max(s.Reset, m.Reset)
	if m.Reset < 0 || s.Reset < 0 {
		s.Reset = -1 // one never full again: the pool neither
	}
	s.Waiting += m.Waiting
	s.Oldest = max(s.Oldest, m.Oldest)
	s.Level += m.Level
	if !m.Paused.IsZero() && (s.Paused.IsZero() || m.Paused.Before(s.Paused)) {
		s.Paused, s.Cause = m.Paused, m.Cause
	}
}

// anyPaused reports whether a limit of a member's state is paused: its
// calls wait for the pause whichever limit it is on.
func anyPaused(st []throttle.LimitStatus) bool {
	for i := range st {
		if !st[i].Paused.IsZero() {
			return true
		}
	}
	return false
}

// sumRate is a + b, over a's period: b's tokens per a's period rounded
// down, so that the sum never promises more than the members refill.
func sumRate(a, b throttle.Rate) throttle.Rate {
	if a == throttle.Inf || b == throttle.Inf {
		return throttle.Inf
	}
	if a.Period() == b.Period() {
		return throttle.Per(satAdd(a.Tokens(), b.Tokens()), a.Period())
	}
	if b.Period() <= 0 || a.Period() <= 0 {
		return a
	}
	n := new(big.Int).Mul(big.NewInt(b.Tokens()), big.NewInt(int64(a.Period())))
	n.Quo(n, big.NewInt(int64(b.Period())))
	if !n.IsInt64() {
		return throttle.Per(math.MaxInt64, a.Period())
	}
	return throttle.Per(satAdd(a.Tokens(), n.Int64()), a.Period())
}

// satAdd is a + b for non-negative counts, at most math.MaxInt64.
func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

var _ throttle.Meter = (*Pool)(nil)
