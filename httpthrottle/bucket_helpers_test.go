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
	limits := l.Limits()
	bs := make([]*throttle.Bucket, len(limits))
	for i, lim := range limits {
		bs[i] = l.Bucket(lim.Name)
	}
	return bs
}
