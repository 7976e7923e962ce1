package httpthrottle_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// TestHugeRetryAfterOneRule: a Retry-After too large for any wait means the
// same however it is written: the limiter pauses for the MaxPause, the
// request is not retried, and nothing is counted as malformed.
func TestHugeRetryAfterOneRule(t *testing.T) {
	for _, v := range []string{"100000000000000000000", "1e20", "1E+20", "99999999999"} {
		fc := clockwork.NewFakeClockAt(epoch)
		var sent int
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sent++
			return &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {v}}, Body: io.NopCloser(strings.NewReader("slow down")), Request: r}, nil
		})
		l := newLimiter(t, fc, 10, throttle.Per(10, time.Second))
		tr := must(httpthrottle.NewTransport(base, httpthrottle.Shared(l), httpthrottle.WithMaxPause(time.Minute)))
		req, _ := http.NewRequest(http.MethodGet, "http://vendor/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		until, paused := pausedUntil(bucketsOf(l)[0])
		if !paused || !until.Equal(epoch.Add(time.Minute)) || sent != 1 || tr.Stats().Malformed != 0 {
			t.Errorf("Retry-After %s: paused %v until %v, %d attempts, %d malformed; want a pause of the MaxPause, 1 attempt, 0 malformed",
				v, paused, until.Sub(epoch), sent, tr.Stats().Malformed)
		}
	}
}
