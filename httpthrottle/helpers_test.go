package httpthrottle_test

import (
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// costCountLimiter is a Limiter of two buckets, "requests" (3 at 3 a
// second) and "tokens" (100 at 100 a second), on clk.
func costCountLimiter(clk clockwork.Clock) (*throttle.Limiter, *throttle.Bucket, *throttle.Bucket) {
	req := must(throttle.New(3, throttle.Per(3, time.Second), throttle.WithClock(clk), throttle.WithName("requests")))
	tok := must(throttle.New(100, throttle.Per(100, time.Second), throttle.WithClock(clk), throttle.WithName("tokens")))
	return must(throttle.NewLimiter(req, tok)), req, tok
}
