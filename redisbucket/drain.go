package redisbucket

import (
	"context"
	"time"
)

// drain runs the script's mode d: limits with a[i] = 1 lowered to at most
// b[i], and a pause of d (rounded up to the µs) when d > 0. nil a and b
// lower nothing but what the pause does. ok reports that Redis applied it,
// with res its reply and us the pause asked in µs.
func (e *engine) drain(ctx context.Context, d time.Duration, a, b []int64) (res result, us int64, ok bool) {
	n := len(e.limits)
	if a == nil {
		a, b = make([]int64, n), make([]int64, n)
	}
	us = int64((d + time.Microsecond - 1) / time.Microsecond)
	now := e.o.clock.Now()
	// An error or an open breaker leaves Redis as it was; there is nothing
	// the caller, a response being read, could do about it.
	res, fail, _, err := e.attempt(ctx, now, modeDrain, "", a, b, us, e.o.permitTTL)
	if !fail || e.local == nil {
		return res, us, !fail && err == nil
	}
	// In failure mode the server's word reaches this process's FailLocal
	// buckets, which decide for it meanwhile: no other process hears it.
	if d > 0 {
		e.local.PauseUntil(now.Add(d))
	}
	for i, lb := range e.localBs {
		if a[i] == 1 {
			// Its share of what the fleet has left, as when the breaker opens.
			e.local.Lower(i, int64(float64(max(b[i], 0))*float64(lb.Status().Capacity)/float64(e.limits[i].capacity)))
		}
	}
	return res, us, false
}
