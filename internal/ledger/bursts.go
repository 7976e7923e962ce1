package ledger

import (
	"context"
	"math"
	"math/bits"
	"sync"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// Followed is a Gate whose bursts from full can be followed: it reports
// its levels and can be lowered.
type Followed interface {
	throttle.Gate
	throttle.Meter
	throttle.Leveler
}

// Bursts keeps the open bursts (see the package doc) of a client's limits.
type Bursts struct {
	mu sync.Mutex
	m  map[Ref]*burst
}

// burst is a burst from a full limit, not yet answered.
type burst struct {
	taken int64 // reserved by the burst's calls so far
	// answered is closed at the first answer; made only for a call that
	// waits for it, as most bursts have none.
	answered chan struct{}
}

// Wait is what a call of a burst admitted past the capacity waits for
// before it is sent: the burst's first answer, then the refill of its
// excess at the limit's rate.
type Wait struct {
	answered <-chan struct{}
	excess   int64
	rate     throttle.Rate
}

// MaxLimits bounds the limits whose bursts are followed: one bit each of
// a mask.
const MaxLimits = 64

// Idle reports whether no burst of the n limits of g is open: a call
// joins an open burst whatever the levels, so only a call that could open
// one reads them.
func (k *Bursts) Idle(g throttle.Gate, n int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range min(n, MaxLimits) {
		if len(k.m) == 0 {
			break
		}
		if k.m[Ref{g, i}] != nil {
			return false
		}
	}
	return true
}

// Bounder is a Meter that bounds its levels from above without what its
// Status may cost (a round trip to Redis, for redisbucket's Limiter): a
// limit StatusBound shows below its capacity is not at it.
type Bounder interface {
	StatusBound(dst []throttle.LimitStatus) []throttle.LimitStatus
}

// Full returns the mask of the limits of g at their capacity that a call
// of costs takes from, read before the call takes them: from Status, unless
// g is a Bounder whose bound shows none of them could be.
func Full(g throttle.Meter, costs []int64) uint64 {
	var buf [4]throttle.LimitStatus
	if b, ok := g.(Bounder); ok && full(b.StatusBound(buf[:0]), costs) == 0 {
		return 0
	}
	return full(g.Status(buf[:0]), costs)
}

// full is the mask of the limits of sts at their capacity that costs take
// from.
func full(sts []throttle.LimitStatus, costs []int64) (mask uint64) {
	for i, st := range sts {
		if i < min(len(costs), MaxLimits) && costs[i] != 0 && st.Remaining >= st.Capacity {
			mask |= 1 << i
		}
	}
	return mask
}

// Join books a call about to be sent, which took costs from g, full the
// limits that were at their capacity before: it opens a burst on those,
// and joins the bursts open. It returns the limits whose bursts it
// joined, and what it must wait for before it is sent, if anything.
func (k *Bursts) Join(g Followed, costs []int64, full uint64) (mask uint64, waits []Wait) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if full == 0 && len(k.m) == 0 {
		return 0, nil
	}
	var sts []throttle.LimitStatus
	for i := range min(len(costs), MaxLimits) {
		if costs[i] == 0 {
			continue
		}
		r := Ref{g, i}
		e := k.m[r]
		if e == nil {
			if full&(1<<i) == 0 {
				continue
			}
			if k.m == nil {
				k.m = make(map[Ref]*burst)
			}
			e = &burst{}
			k.m[r] = e
		}
		e.taken = SatAdd(e.taken, costs[i])
		mask |= 1 << i
		if sts == nil {
			sts = g.Status(nil)
		}
		if excess := e.taken - sts[i].Capacity; excess > 0 {
			if e.answered == nil {
				e.answered = make(chan struct{})
			}
			waits = append(waits, Wait{answered: e.answered, excess: excess, rate: sts[i].Rate})
		}
	}
	return mask, waits
}

// Answered ends the bursts of mask on g, which a call of theirs joined,
// the server having answered that call: each limit is lowered to its
// capacity less what its burst reserved, into debt if need be.
func (k *Bursts) Answered(g Followed, mask uint64) {
	if mask == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var sts []throttle.LimitStatus
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		r := Ref{g, i}
		e := k.m[r]
		if e == nil {
			continue
		}
		if sts == nil {
			sts = g.Status(nil)
		}
		capacity := sts[i].Capacity
		g.Lower(i, max(capacity-e.taken, -capacity))
		e.end()
		delete(k.m, r)
	}
}

// Leave takes back from the bursts of mask on g a call of costs that
// joined them and will not be sent: a burst left by all its calls ends
// without a correction, the server having seen none of them.
func (k *Bursts) Leave(g throttle.Gate, costs []int64, mask uint64) {
	if mask == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range min(len(costs), MaxLimits) {
		r := Ref{g, i}
		if e := k.m[r]; mask&(1<<i) != 0 && e != nil {
			if e.taken -= costs[i]; e.taken <= 0 {
				e.end()
				delete(k.m, r)
			}
		}
	}
}

// Taken returns what the open burst of limit r reserved, 0 when none is
// open.
func (k *Bursts) Taken(r Ref) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e := k.m[r]; e != nil {
		return e.taken
	}
	return 0
}

// end releases the calls waiting for the burst's answer.
func (e *burst) end() {
	if e.answered != nil {
		close(e.answered)
	}
}

// Wait waits out w on clock, or ctx's end.
func (w Wait) Wait(ctx context.Context, clock clockwork.Clock) error {
	select {
	case <-w.answered:
	case <-ctx.Done():
		return ctx.Err()
	}
	d := RefillTime(w.excess, w.rate.Tokens(), w.rate.Period())
	if d <= 0 || d == math.MaxInt64 {
		return nil
	}
	timer := clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.Chan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
