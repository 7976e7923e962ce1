package throttle

import (
	"slices"
	"time"

	"github.com/throttlekit/throttle/internal/exact"
)

// LimitStatus is the state of one limit: what Bucket.Status and Meter's
// Status report, and what Handler answers with after it took, or
// refused, a request's cost.
type LimitStatus struct {
	Name      string        // the bucket's name
	Unit      string        // what it counts, for IETF's qu ("content-bytes"); empty for requests
	Capacity  int64         // the most tokens it holds
	Rate      Rate          // its refill rate
	Remaining int64         // whole tokens left, never negative
	Reset     time.Duration // until it is full again, or -1 if never
	Paused    time.Time     // the end of the pause in force; zero if none
	Cause     string        // what asked for that pause, when known; see WaitError.Cause
	Waiting   int           // calls queued on the limit's group (limits acquired together share one queue)
	Oldest    time.Duration // how long the first of them has been queued; 0 if none
	// Level is the level now, fraction and debt included, for gauges and
	// charts: every decision is taken on exact integers, never on it. A
	// Gate that cannot read it cheaply (redisbucket's) leaves it 0.
	Level float64
}

// Status returns the bucket's state now, read under one lock: its name,
// capacity, rate, whole tokens left, time until full, the end of a pause
// in force, and the level for a gauge.
func (b *Bucket) Status() LimitStatus {
	g := b.lock()
	now := g.Now()
	g.serve(now)
	b.Advance(&b.lvl, now)
	st := LimitStatus{Name: b.name, Capacity: b.Cap, Rate: b.rate, Remaining: max(b.lvl.Tokens, 0), Reset: -1, Level: b.Value(&b.lvl)}
	st.Paused = b.pausedAt(g, now)
	if !st.Paused.IsZero() {
		st.Cause = b.cause.now
	}
	if st.Waiting = g.Len; g.Head != nil {
		st.Oldest = time.Duration(max(now-g.Head.Since, 0))
	}
	if b.Cap > 0 {
		bs, costs := [1]*Bucket{b}, [1]int64{b.Cap}
		if t := g.waitUntil(bs[:], costs[:], now); t != exact.Never {
			st.Reset = time.Duration(t - now)
		}
	}
	g.Mu.Unlock()
	return st
}

// limit describes b as a Limit.
func (b *Bucket) limit() Limit {
	g := b.lock()
	defer g.Mu.Unlock()
	return Limit{Name: b.name, Capacity: b.Cap, Rate: b.rate}
}

// limitStatus appends the state of every bucket of l to dst.
func limitStatus(l *Limiter, dst []LimitStatus) []LimitStatus {
	dst = slices.Grow(dst, len(l.bs))
	for _, b := range l.bs {
		dst = append(dst, b.Status())
	}
	return dst
}

// capacity returns b's capacity.
func (b *Bucket) capacity() int64 {
	g := b.lock()
	defer g.Mu.Unlock()
	return b.Cap
}

// pausedUntil returns the end of b's pause in force, zero if none.
func (b *Bucket) pausedUntil() time.Time {
	g := b.lock()
	defer g.Mu.Unlock()
	return b.pausedAt(g, g.Now())
}

// pausedAt is pausedUntil with g locked, at now.
func (b *Bucket) pausedAt(g *group, now int64) time.Time {
	if b.paused <= now {
		return time.Time{}
	}
	return g.Epoch.Add(time.Duration(b.paused))
}
