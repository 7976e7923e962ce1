package llm_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// newLimiter returns a one-bucket limiter named "requests".
func newLimiter(t testing.TB, c clockwork.Clock, capacity int64, r throttle.Rate) *throttle.Limiter {
	t.Helper()
	opts := []throttle.Option{throttle.WithName("requests")}
	if c != nil {
		opts = append(opts, throttle.WithClock(c))
	}
	return must(throttle.NewLimiter(must(throttle.New(capacity, r, opts...))))
}

// newBase returns a base transport of the test's own, whose idle
// connections are closed when the test ends.
func newBase(t testing.TB) *http.Transport {
	base := &http.Transport{MaxIdleConnsPerHost: 512}
	t.Cleanup(base.CloseIdleConnections)
	return base
}

// twoBuckets returns a limiter of "requests" (capacity 10) and "tokens"
// (capacity 1000), both refilling over a minute.
func twoBuckets(t testing.TB, fc clockwork.Clock) *throttle.Limiter {
	t.Helper()
	r := must(throttle.New(10, throttle.Per(10, time.Minute), throttle.WithClock(fc), throttle.WithName("requests")))
	tok := must(throttle.New(1000, throttle.Per(1000, time.Minute), throttle.WithClock(fc), throttle.WithName("tokens")))
	return must(throttle.NewLimiter(r, tok))
}

// bucketsOf returns the buckets of l, in cost order.
func bucketsOf(l *throttle.Limiter) []*throttle.Bucket {
	var bs []*throttle.Bucket
	for _, lim := range l.Limits() {
		bs = append(bs, l.Bucket(lim.Name))
	}
	return bs
}

// pausedUntil returns the end of b's pause, and whether it is paused.
func pausedUntil(b *throttle.Bucket) (time.Time, bool) {
	u := b.Status().Paused
	return u, !u.IsZero()
}
