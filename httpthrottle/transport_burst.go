package httpthrottle

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// Bursts from a full bucket.
//
// A server's quota that is full does not refill: it stays full until the
// server sees the calls taken from it. A client's bucket emptied by the
// same calls refilled from the instant it admitted them. By the time the
// server counts them (a connection, a request body, a scheduler later)
// the client has counted a refill the server never had: at 40,000 tokens
// a second, a few hundred tokens for the tens of milliseconds a burst of
// new connections takes, and the next call, admitted on them, is refused.
// OpenAI's exact remaining count corrects the level once it arrives;
// Anthropic's, rounded to the thousand, cannot, and neither corrects a
// call admitted before any answer came.
//
// So a call taken from a bucket at its capacity opens a burst, and every
// call taken from that bucket until the server answers one of them joins
// it. The first answer (its status and headers: the server has counted
// that call, so its quota has left its capacity) lowers the bucket to its
// capacity less what the burst reserved, into debt if need be: the refill
// counted before it goes. A call of the burst admitted on that refill (the
// burst's reservations past the capacity) is not sent before that answer,
// and then only after the refill of its excess: the server is short of it
// until then. The answer bounds the instant the server left its capacity
// from above, so the client never counts a token the server has not had;
// for a long call, answered only when its reply is done, that costs the
// refill of its duration once, at the start of a burst after an idle spell.
// A call granted just before the first answer that joins only after it
// (the few instructions from its grant to join) escapes the correction:
// its take is counted neither in the burst nor after it.

// Bursts are followed on a Gate that takes without a Permit (Taker), can
// be lowered (Leveler) and reports its levels (Meter). The levels are read
// (a round trip to Redis for redisbucket's Limiter) only by a call that
// could open a burst: none is open, and the Transport has no call of the
// Gate in flight, which the server would have counted or be about to
// count (its quota is then not full).

// follows reports whether the Transport follows the bursts from full of
// g: it has an Accounting, and g is a Taker, a Leveler and a Meter.
func (t *Transport) follows(g *gate) bool {
	return t.acct != nil && g.tk != nil && g.level != nil && g.meter != nil && g.keyed
}

// fullBefore returns the mask of g's limits at their capacity that costs
// take from, read before the call takes them, when the call could open a
// burst: none is open, and no call of g is in flight.
func (t *Transport) fullBefore(g *gate, costs []int64) uint64 {
	if !t.bursts.idle(g) || !t.inFlight.idle(g) {
		return 0
	}
	return t.bursts.full(g, costs)
}

// memberFull is fullBefore of each member of a pool, by name, read before
// the call takes its permit from the pool: the member that serves it is
// known only after, and another call taken meanwhile from the same member
// would hide that it was full.
type memberFull struct {
	names []string
	masks []uint64
}

// membersFull returns memberFull of g's members if g is a pool.
func (t *Transport) membersFull(g *gate, costs []int64) (f memberFull) {
	for _, m := range g.members {
		if mg := t.gates.of(m.Gate); t.follows(mg) {
			if mask := t.fullBefore(mg, costs); mask != 0 {
				f.names, f.masks = append(f.names, m.Name), append(f.masks, mask)
			}
		}
	}
	return f
}

// of returns the mask of the member named name.
func (f memberFull) of(name string) uint64 {
	for i, n := range f.names {
		if n == name {
			return f.masks[i]
		}
	}
	return 0
}

// burstBook keeps the open bursts of a Transport's limits.
type burstBook struct {
	mu sync.Mutex
	m  map[limitRef]*burst
}

// burst is a burst from a full limit, not yet answered.
type burst struct {
	taken int64 // reserved by the burst's calls so far
	// answered is closed at the first answer; made only for a call that
	// waits for it, as most bursts have none.
	answered chan struct{}
}

// burstWait is what a call of a burst admitted past the capacity waits for
// before it is sent: the burst's first answer, then the refill of excess
// tokens at the limit's rate.
type burstWait struct {
	answered <-chan struct{}
	excess   int64
	rate     throttle.Rate
}

// maxBurstLimits bounds the limits whose bursts are followed: one bit
// each of a mask.
const maxBurstLimits = 64

// idle reports whether no burst of g is open: a call joins an open burst
// whatever its limits' levels, so only a call that opens one reads them.
func (k *burstBook) idle(g *gate) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.m) == 0 {
		return true
	}
	for i := range min(len(g.limits), maxBurstLimits) {
		if k.m[limitRef{g.g, i}] != nil {
			return false
		}
	}
	return true
}

// full returns the mask of the limits of g at their capacity that a call
// of costs takes from, read before the call takes them.
func (k *burstBook) full(g *gate, costs []int64) (mask uint64) {
	var buf [4]throttle.LimitStatus
	for i, st := range g.meter.Status(buf[:0]) {
		if i >= min(len(costs), maxBurstLimits) || costs[i] == 0 {
			continue
		}
		if st.Remaining >= st.Capacity {
			mask |= 1 << i
		}
	}
	return mask
}

// join books a call about to be sent, which took costs from g, full the
// limits that were at their capacity before: it opens a burst on those,
// and joins the bursts open. It returns the limits whose bursts it
// joined, and what it must wait for before it is sent, if anything.
func (k *burstBook) join(g *gate, costs []int64, full uint64) (mask uint64, waits []burstWait) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if full == 0 && len(k.m) == 0 {
		return 0, nil
	}
	var sts []throttle.LimitStatus
	for i := range min(len(costs), maxBurstLimits) {
		if costs[i] == 0 {
			continue
		}
		r := limitRef{g.g, i}
		e := k.m[r]
		if e == nil {
			if full&(1<<i) == 0 {
				continue
			}
			if k.m == nil {
				k.m = make(map[limitRef]*burst)
			}
			e = &burst{}
			k.m[r] = e
		}
		e.taken = satAdd(e.taken, costs[i])
		mask |= 1 << i
		if sts == nil {
			sts = g.meter.Status(nil)
		}
		if excess := e.taken - sts[i].Capacity; excess > 0 {
			if e.answered == nil {
				e.answered = make(chan struct{})
			}
			waits = append(waits, burstWait{answered: e.answered, excess: excess, rate: sts[i].Rate})
		}
	}
	return mask, waits
}

// answered ends the bursts of mask on g, which a call of theirs joined,
// the server having answered that call: each limit is lowered to its
// capacity less what its burst reserved, into debt if need be.
func (k *burstBook) answered(g *gate, mask uint64) {
	if mask == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var sts []throttle.LimitStatus
	for i := range min(len(g.limits), maxBurstLimits) {
		r := limitRef{g.g, i}
		e := k.m[r]
		if mask&(1<<i) == 0 || e == nil {
			continue
		}
		if sts == nil {
			sts = g.meter.Status(nil)
		}
		capacity := sts[i].Capacity
		g.level.Lower(i, max(capacity-e.taken, -capacity))
		e.end()
		delete(k.m, r)
	}
}

// leave takes back from the bursts of mask on g a call of costs that
// joined them and will not be sent: a burst left by all its calls ends
// without a correction, the server having seen none of them.
func (k *burstBook) leave(g *gate, costs []int64, mask uint64) {
	if mask == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range min(len(costs), maxBurstLimits) {
		r := limitRef{g.g, i}
		e := k.m[r]
		if mask&(1<<i) == 0 || e == nil {
			continue
		}
		if e.taken -= costs[i]; e.taken <= 0 {
			e.end()
			delete(k.m, r)
		}
	}
}

// end releases the calls waiting for the burst's answer.
func (e *burst) end() {
	if e.answered != nil {
		close(e.answered)
	}
}

// wait waits out waits on clock, or ctx's end.
func (w burstWait) wait(ctx context.Context, clock clockwork.Clock) error {
	select {
	case <-w.answered:
	case <-ctx.Done():
		return ctx.Err()
	}
	d := refillTime(w.excess, w.rate.Tokens(), w.rate.Period())
	if d <= 0 || d == time.Duration(1<<63-1) {
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
