package httpthrottle

import "time"

// The pause after a refusal that names no usable wait follows the SDKs'
// own back-off (see ledger.Refusals). The retry of such a call waits out
// its own call's pause only, not other calls' pauses nor their queue: a
// call the server keeps refusing then costs no more time than the SDK
// alone spends on it.

// usableWait reports whether d, a server's wait on a refusal, is one to
// pause for: a wait of zero (a Retry-After of 0, or a date in the past) is
// no more usable than none.
func usableWait(d time.Duration, ok bool) bool { return ok && d > 0 }

// takeRetry takes the costs of a recognised retry once its own call's
// pause is over, at once, as debt when the limits do not hold them or are
// paused by another call's refusal; on a Gate that is no Taker it waits
// its turn.
func (x *exchange) takeRetry(until time.Time) (int64, error) {
	start := x.now()
	if d := x.g.clock.Until(until); d > 0 {
		timer := x.g.clock.NewTimer(d)
		select {
		case <-timer.Chan():
		case <-x.ctx.Done():
			timer.Stop()
			return 0, x.ctx.Err()
		}
	}
	tk := x.g.tk
	if tk == nil {
		if _, err := x.take(x.ctx); err != nil {
			return 0, err
		}
		return x.now() - start, nil
	}
	if ok, err := tk.TryAcquire(x.costs...); err != nil {
		return 0, err
	} else if !ok {
		tk.Settle(make([]int64, len(x.costs)), x.costs)
	}
	return x.now() - start, nil
}
