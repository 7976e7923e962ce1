package httpthrottle

import (
	"time"

	"github.com/throttlekit/throttle"
)

// pausedUntil returns the end of b's pause, and whether one is in force.
func pausedUntil(b *throttle.Bucket) (time.Time, bool) {
	u := b.Status().Paused
	return u, !u.IsZero()
}

// buckets returns l's buckets in cost order, found by their names.
func buckets(l *throttle.Limiter) []*throttle.Bucket {
	bs, err := bucketsOf(l)
	if err != nil {
		panic(err)
	}
	return bs
}
