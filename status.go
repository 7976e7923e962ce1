package throttle

import (
	"slices"
	"time"
)

// LimitStatus is the state of one bucket of a Limiter after the middleware
// took, or refused, a request's cost.
type LimitStatus struct {
	Name      string        // the bucket's name
	Unit      string        // what it counts, for IETF's qu ("content-bytes"); empty for requests
	Capacity  int64         // the most tokens it holds
	Rate      Rate          // its refill rate
	Remaining int64         // whole tokens left, never negative
	Reset     time.Duration // until it is full again, or -1 if never
}

// limitStatus appends the state of every bucket of l to dst.
func limitStatus(l *Limiter, dst []LimitStatus) []LimitStatus {
	dst = slices.Grow(dst, len(l.bs))
	for _, b := range l.bs {
		capacity := b.Capacity()
		reset, err := b.WaitTime(capacity)
		if err != nil {
			reset = -1
		}
		dst = append(dst, LimitStatus{
			Name:      b.name,
			Capacity:  capacity,
			Rate:      b.Rate(),
			Remaining: max(int64(b.Tokens()), 0),
			Reset:     reset,
		})
	}
	return dst
}
