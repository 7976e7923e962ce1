package otelthrottle_test

// Helpers for the tests: the state and operations of a single bucket, which
// users reach through Status and a Limiter over the bucket.

import (
	"fmt"
	"time"

	"github.com/throttlekit/throttle"
)

// pauseBucket pauses b until t, through a Limiter over it.
func pauseBucket(b *throttle.Bucket, t time.Time) {
	l, err := throttle.NewLimiter(b)
	if err != nil {
		panic(err)
	}
	l.PauseUntil(t)
}

// one token settled at n+1.
func charge(b *throttle.Bucket, n int64) error {
	l, err := throttle.NewLimiter(b)
	if err != nil {
		return err
	}
	p, ok, err := l.TryAcquirePermit(1)
	if err != nil || !ok {
		return fmt.Errorf("charge: TryAcquirePermit(1) = %v, %v", ok, err)
	}
	return p.Settle(n)
}
