package httpthrottle_test

// Helpers for the tests: the state and operations of a single bucket, which
// users reach through Status and a Limiter over the bucket.

import (
	"time"

	"github.com/throttlekit/throttle"
)

// bucketsOf returns l's buckets in cost order, by their names.
func bucketsOf(l *throttle.Limiter) []*throttle.Bucket {
	var bs []*throttle.Bucket
	for _, lim := range l.Limits() {
		bs = append(bs, l.Bucket(lim.Name))
	}
	return bs
}

// drain lowers b to at most remaining, through a Limiter over it.
func drain(b *throttle.Bucket, remaining int64) {
	l, err := throttle.NewLimiter(b)
	if err != nil {
		panic(err)
	}
	l.Lower(0, remaining)
}

// pausedUntil returns the end of b's pause, and whether one is in force.
func pausedUntil(b *throttle.Bucket) (time.Time, bool) {
	u := b.Status().Paused
	return u, !u.IsZero()
}
