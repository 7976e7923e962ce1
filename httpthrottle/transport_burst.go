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

// burstBook keeps the open bursts of a Transport's buckets.
type burstBook struct {
	mu sync.Mutex
	m  map[*throttle.Bucket]*burst
}

// burst is a burst from a full bucket, not yet answered.
type burst struct {
	taken int64 // reserved by the burst's calls so far
	// answered is closed at the first answer; made only for a call that
	// waits for it, as most bursts have none.
	answered chan struct{}
}

// burstWait is what a call of a burst admitted past the capacity waits for
// before it is sent: the burst's first answer, then the refill of excess
// tokens at the bucket's rate.
type burstWait struct {
	answered <-chan struct{}
	excess   int64
	rate     throttle.Rate
}

// maxBurstBuckets bounds the buckets whose bursts are followed: one bit
// each of a mask.
const maxBurstBuckets = 64

// full returns the mask of the buckets of bs at their capacity that a call
// of costs takes from: read before the call takes them.
func (k *burstBook) full(bs []*throttle.Bucket, costs []int64) (mask uint64) {
	for i, b := range bs[:min(len(bs), maxBurstBuckets)] {
		if costs[i] != 0 && core.Full(b) {
			mask |= 1 << i
		}
	}
	return mask
}

// join books a call about to be sent, which took costs from bs, full the
// buckets that were at their capacity before: it opens a burst on those,
// and joins the bursts open. It returns the buckets whose bursts it
// joined, and what it must wait for before it is sent, if anything.
func (k *burstBook) join(bs []*throttle.Bucket, costs []int64, full uint64) (mask uint64, waits []burstWait) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if full == 0 && len(k.m) == 0 {
		return 0, nil
	}
	for i, b := range bs[:min(len(bs), maxBurstBuckets)] {
		if costs[i] == 0 {
			continue
		}
		e := k.m[b]
		if e == nil {
			if full&(1<<i) == 0 {
				continue
			}
			if k.m == nil {
				k.m = make(map[*throttle.Bucket]*burst)
			}
			e = &burst{}
			k.m[b] = e
		}
		e.taken = satAdd(e.taken, costs[i])
		mask |= 1 << i
		if excess := e.taken - core.Capacity(b); excess > 0 {
			if e.answered == nil {
				e.answered = make(chan struct{})
			}
			waits = append(waits, burstWait{answered: e.answered, excess: excess, rate: b.Status().Rate})
		}
	}
	return mask, waits
}

// answered ends the bursts of mask on bs, which a call of theirs joined,
// the server having answered that call: each bucket is lowered to its
// capacity less what its burst reserved.
func (k *burstBook) answered(bs []*throttle.Bucket, mask uint64) {
	if mask == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, b := range bs[:min(len(bs), maxBurstBuckets)] {
		e := k.m[b]
		if mask&(1<<i) == 0 || e == nil {
			continue
		}
		capacity := core.Capacity(b)
		core.LowerTo(b, max(capacity-e.taken, -capacity))
		e.end()
		delete(k.m, b)
	}
}

// leave takes back from the bursts of mask on bs a call of costs that
// joined them and will not be sent: a burst left by all its calls ends
// without a correction, the server having seen none of them.
func (k *burstBook) leave(bs []*throttle.Bucket, costs []int64, mask uint64) {
	if mask == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, b := range bs[:min(len(bs), maxBurstBuckets)] {
		e := k.m[b]
		if mask&(1<<i) == 0 || e == nil {
			continue
		}
		if e.taken -= costs[i]; e.taken <= 0 {
			e.end()
			delete(k.m, b)
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
