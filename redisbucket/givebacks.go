package redisbucket

import (
	"context"
	"time"
)

// maxBacks is how many give-backs pauses keeps for sleepers that have not
// looked yet; one that missed older ones moves by fewer, never early.
const maxBacks = 256

// back is what a call carried back to Redis for settlements (per limit,
// less the charges it carried), with the call's number in the id's
// sequence: it was applied after every reservation with a lower one.
type back struct {
	seq int64
	g   []int64
}

// gaveBack records a give-back that Redis applied as number seq and wakes
// the sleepers: a reserved sleeper's queue ahead is that much shorter.
func (p *pauses) gaveBack(seq int64, g []int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backs = append(p.backs, back{seq: seq, g: g})
	if n := len(p.backs) - maxBacks; n > 0 {
		p.backs = append([]back(nil), p.backs[n:]...)
		p.dropped += n
	}
	p.wake()
}

// backsAfter adds to g the give-backs applied after the reservation
// numbered seq (none for 0: a reply without a number), from the one
// recorded as next on, and returns the index to look from next time.
func (p *pauses) backsAfter(seq int64, next int, g []int64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := max(next, p.dropped); i < p.dropped+len(p.backs); i++ {
		b := p.backs[i-p.dropped]
		if seq == 0 || b.seq <= seq {
			continue
		}
		for j, v := range b.g {
			g[j] += v
		}
	}
	return p.dropped + len(p.backs)
}

// netBack is what a call that carried c gave back per limit, nil if
// nothing: its refunds less its charges, limit by limit.
func netBack(c carried) []int64 {
	var g []int64
	for i, r := range c.refund {
		if i < len(c.owed) {
			r -= c.owed[i]
		}
		if r > 0 {
			if g == nil {
				g = make([]int64, len(c.refund))
			}
			g[i] = r
		}
	}
	return g
}

// settledBack adds to g (nil for none) what a permit's settlement gave
// back: per limit, what was taken beyond the actual use.
func settledBack(g, taken, actual []int64) []int64 {
	for i, c := range taken {
		if i < len(actual) && c > actual[i] {
			if g == nil {
				g = make([]int64, len(taken))
			}
			g[i] += c - actual[i]
		}
	}
	return g
}

// carryBacks sends this process's pending give-backs to Redis at once (a
// look at the state carries them, as any call does), when a reserved
// sleeper would go sooner with them: otherwise they wait for the next
// call, which no sleeper makes. One such call at a time: its landing
// wakes every sleeper.
func (e *engine) carryBacks(ctx context.Context) {
	if !e.carrying.CompareAndSwap(false, true) {
		return
	}
	defer e.carrying.Store(false)
	e.confirm(ctx)
}

// backCover is when, after the reply, a reservation whose reply left one
// limit in debt is covered once g more has been given back on each limit
// after it: the wait the reply gave, less what that limit's refill from
// its level explains of it (a pause in force, or a stored time ahead of
// the clock, make the rest) and plus its refill from the level with g
// added, and not before a pause in force ends. Covers are rounded up:
// never earlier than the give-backs make it.
// A limit that does not bind is taken as at the instant, lowered by what
// it would refill past its capacity by then, never below the cost; one
// that would have gone below is left to be taken at the instant (the
// reply's amount marks it), and holds nothing back sooner. False when
// the levels are not known exactly, or when more than one limit is in
// debt otherwise.
func (e *engine) backCover(res result, g []int64) (time.Duration, bool) {
	if res.status != statusGranted || res.wholeOnly || len(res.levels) < 2*len(e.limits) {
		return 0, false
	}
	debt := -1
	for j, l := range e.limits {
		if res.levels[2*j] < 0 && !res.leftLater(j) {
			if debt >= 0 || l.num == 0 {
				return 0, false
			}
			debt = j
		}
	}
	if debt < 0 {
		return 0, false
	}
	l := e.limits[debt]
	need := -(res.levels[2*debt]*l.den + res.levels[2*debt+1])
	before, after := l.refill(need), int64(0)
	if back := g[debt]; back < need/l.den+1 {
		if left := need - back*l.den; left > 0 {
			after = l.refill(left)
		}
	}
	// The same offset from the start of the unit is in the wait and in
	// the cover with g: only a pause in force may hold it longer.
	cover := max(res.wait.Microseconds()-before+after, res.paused-res.now, 0)
	return time.Duration(cover) * time.Microsecond, true
}
