package httpthrottle

import (
	"time"

	"github.com/throttlekit/throttle"
)

// pausedUntil returns the end of b's pause, and whether one is in force.
func pausedUntil(b *throttle.Bucket) (time.Time, bool) {
	u := core.Paused(b)
	return u, !u.IsZero()
}
