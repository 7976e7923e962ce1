package sdktest_test

import (
	"net/http"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// newLimiter returns a one-bucket limiter named "requests".
func newLimiter(t testing.TB, c clockwork.Clock, capacity int64, r throttle.Rate) *throttle.Limiter {
	t.Helper()
	opts := []throttle.Option{throttle.WithName("requests")}
	if c != nil {
		opts = append(opts, throttle.WithClock(c))
	}
	b, err := throttle.New(capacity, r, opts...)
	if err != nil {
		t.Fatal(err)
	}
	l, err := throttle.NewLimiter(b)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// newBase returns a base transport of the test's own, whose idle
// connections are closed when the test ends.
func newBase(t testing.TB) *http.Transport {
	base := &http.Transport{MaxIdleConnsPerHost: 512}
	t.Cleanup(base.CloseIdleConnections)
	return base
}
