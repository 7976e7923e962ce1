package auto

import "github.com/throttlekit/throttle/internal/headers"

// roundedCount is a remaining count as a server reported it, with the
// range the server's true count lies in. Most servers report exact counts
// (lo = hi = rem); Anthropic rounds its token counts to the nearest
// thousand, so that a reported 0 means anything up to 499, and a count
// that steps from 1,000 to 0 may mean that 2 tokens were spent, not a
// thousand. Learning from such a count as if it were exact drains the
// bucket to nothing while the server still holds hundreds, and reads a
// step of the rounding as others' spending, cutting the client's share
// again and again while it is alone.
type roundedCount struct {
	rem    int64 // as reported
	lo, hi int64 // the least and the most it may mean
}

// countOf is the remaining count qu reports, which must be >= 0.
func countOf(qu *headers.Quota) roundedCount {
	c := roundedCount{rem: qu.Remaining, lo: qu.Remaining, hi: qu.MostRemaining()}
	if u := qu.Rounding(); u > 0 {
		c.lo = max(qu.Remaining-u/2, 0)
	}
	return c
}

// nearest is the value within the count's range nearest v: what the
// count proves about v, and no more. The share rule's target uses it for
// the level the client steers to (the reserve): a count whose range holds
// the reserve proves neither a surplus to spend nor a shortfall to make up.
func (c roundedCount) nearest(v float64) float64 {
	return min(max(v, float64(c.lo)), float64(c.hi))
}

// stepped returns the level a rounded count pins when it has just stepped
// down, and whether it has: the previous count's range and c's do not
// meet, so the server's count crossed the boundary between them since the
// previous response. It holds at most c.hi, and at least the least of the
// previous count less what the client spent since (cost, the response's
// own): a rounded count that steps is as good as exact, once.
func (ln *lane) stepped(c roundedCount, cost int64) (float64, bool) {
	if c.lo == c.hi || c.hi >= ln.prevLo {
		return 0, false
	}
	return float64(max(min(c.hi, ln.prevLo-cost), c.lo)), true
}

// raise gives the lane's bucket what it lacks of level n.
func (ln *lane) raise(n int64) {
	if d := n - ln.b.Status().Remaining; d > 0 {
		ln.lim.Settle([]int64{d}, []int64{0})
	}
}
