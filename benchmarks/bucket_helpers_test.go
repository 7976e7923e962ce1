package benchmarks

// Helpers for the tests: the state and operations of a single bucket, which
// users reach through Status and a Limiter over the bucket.

import (
	"github.com/throttlekit/throttle"
)

// drain lowers b to at most remaining, through a Limiter over it.
func drain(b *throttle.Bucket, remaining int64) {
	l, err := throttle.NewLimiter(b)
	if err != nil {
		panic(err)
	}
	l.Lower(0, remaining)
}
