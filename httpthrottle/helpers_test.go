package httpthrottle_test

import (
	"net/http"
	"strings"
	"testing"
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

// post returns a POST of body to url, as an SDK sends it.
func post(t testing.TB, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer k")
	return req
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
