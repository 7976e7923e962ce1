package redisbucket

import (
	"context"
	"time"

	"github.com/throttlekit/throttle"
)

// decision is the outcome of one attempt.
type decision struct {
	granted bool
	never   bool          // a limit without refill cannot cover the cost
	wait    time.Duration // until it could pass, when denied
	limit   int           // index of the limit that binds the wait
	mode    Mode
	cause   error // in failure mode, the error that opened the breaker
	amount  int64 // lease size
	levels  []int64
	reset   bool  // the script found garbage state and restarted the limits empty
	at      int64 // the server time of the decision, µs; 0 when the failure policy took it
	paused  int64 // the end of a pause in force, server µs, or 0
	// wholeOnly: levels hold whole tokens only (a fast-path reply)
	wholeOnly bool
	// hoping: refused for a wait past the deadline that is not certain
	// (estimates.go): the caller waits and decides again as permits settle
	hoping bool
	local  throttle.Permit // under FailLocal, what the local buckets granted, to settle there
	// tried, when not nil, ends the wait: the failure policy waits for
	// the suspect breaker's try in flight (breaker.tryEnds).
	tried <-chan struct{}
}

// decide takes one decision: by the script when the breaker lets it call,
// by the failure policy otherwise or when the call fails.
func (e *engine) decide(ctx context.Context, costs []int64, permit string) (decision, error) {
	now := e.o.clock.Now()
	res, fail, cause, err := e.attempt(ctx, now, modeAcquire, permit, costs, nil, 1, e.o.permitTTL)
	if err != nil {
		return decision{}, err
	}
	if fail {
		return e.fallback(costs, cause, now), nil
	}
	return e.fromResult(res, costs), nil
}

// fromResult reads a reply as a decision.
func (e *engine) fromResult(res result, costs []int64) decision {
	d := decision{mode: ModeRedis, levels: res.levels, amount: res.amount, reset: res.reset(), at: res.now,
		paused: res.paused, wholeOnly: res.wholeOnly}
	switch res.status {
	case statusGranted, statusApplied:
		d.granted = true
	case statusNever:
		d.never = true
	default:
		d.wait = res.wait
	}
	if !d.granted {
		d.limit = e.binding(res.levels, costs)
	}
	return d
}

// binding returns the index of the limit that needs the longest wait.
func (e *engine) binding(levels []int64, costs []int64) int {
	best, bestWait := 0, int64(-1)
	for i, l := range e.limits {
		tok, rem := levels[2*i], levels[2*i+1]
		if costs[i] <= 0 || tok >= costs[i] {
			continue
		}
		if l.num == 0 {
			return i
		}
		w := l.refill((costs[i]-tok)*l.den - rem)
		if w > bestWait {
			best, bestWait = i, w
		}
	}
	return best
}
