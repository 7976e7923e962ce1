package redisbucket_test

// Helpers for the tests: the state and operations of a single bucket, which
// users reach through Status and a Limiter over the bucket.

import (
	"time"

	"github.com/throttlekit/throttle"
)

// pausedUntil returns the end of b's pause, and whether one is in force.
func pausedUntil(b *throttle.Bucket) (time.Time, bool) {
	u := b.Status().Paused
	return u, !u.IsZero()
}
