package httpthrottle_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// twoBuckets returns a limiter of "requests" (capacity 10) and "tokens"
// (capacity 1000), both refilling over a minute.
func twoBuckets(t testing.TB, fc clockwork.Clock) *throttle.Limiter {
	t.Helper()
	r, err := throttle.New(10, throttle.Per(10, time.Minute), throttle.WithClock(fc), throttle.WithName("requests"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := throttle.New(1000, throttle.Per(1000, time.Minute), throttle.WithClock(fc), throttle.WithName("tokens"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := throttle.NewLimiter(r, tok)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestTransportHeedsSignals sends one request (costing 1 request and 1
// token) and checks what the response's headers did to the limiter.
func TestTransportHeedsSignals(t *testing.T) {
	date := epoch.UTC().Format(http.TimeFormat)
	tests := []struct {
		name      string
		status    int
		h         http.Header
		requests  float64       // level of "requests" afterwards
		tokens    float64       // level of "tokens" afterwards
		pause     time.Duration // 0: not paused
		malformed int64
	}{
		{"nothing", 200, nil, 9, 999, 0, 0},
		{"IETF", 200, http.Header{"Ratelimit-Policy": {`"requests";q=10;w=60, "tokens";q=1000;w=60`}, "Ratelimit": {`"requests";r=3;t=40, "tokens";r=500;t=30`}}, 3, 500, 0, 0},
		{"IETF default policy", 200, http.Header{"Ratelimit": {`"default";r=4;t=40`}}, 4, 999, 0, 0},
		{"IETF content-bytes, no such bucket", 200, http.Header{"Ratelimit-Policy": {`"default";q=100000;qu="content-bytes"`}, "Ratelimit": {`"default";r=2`}}, 9, 999, 0, 0},
		{"IETF unit bucket", 200, http.Header{"Ratelimit-Policy": {`"perday";q=1000;qu="tokens"`}, "Ratelimit": {`"perday";r=300`}}, 9, 300, 0, 0},
		{"IETF legacy", 200, http.Header{"Ratelimit-Limit": {"10"}, "Ratelimit-Remaining": {"5"}, "Ratelimit-Reset": {"30"}}, 5, 999, 0, 0},
		{"X-RateLimit", 200, http.Header{"X-Ratelimit-Limit": {"60"}, "X-Ratelimit-Remaining": {"2"}, "X-Ratelimit-Reset": {"1900000000"}, "Date": {date}}, 2, 999, 0, 0},
		{"x-rate-limit", 200, http.Header{"X-Rate-Limit-Remaining": {"1"}}, 1, 999, 0, 0},
		{"OpenAI", 200, http.Header{"X-Ratelimit-Remaining-Requests": {"6"}, "X-Ratelimit-Remaining-Tokens": {"250"}, "X-Ratelimit-Reset-Tokens": {"6m0s"}}, 6, 250, 0, 0},
		{"Anthropic", 200, http.Header{"Anthropic-Ratelimit-Requests-Remaining": {"7"}, "Anthropic-Ratelimit-Tokens-Remaining": {"0"}, "Anthropic-Ratelimit-Tokens-Reset": {"2030-01-02T03:05:05Z"}}, 7, 499, 0, 0},
		{"Anthropic input tokens, no such bucket", 200, http.Header{"Anthropic-Ratelimit-Input-Tokens-Remaining": {"3"}}, 9, 999, 0, 0},
		{"never raised", 200, http.Header{"X-Ratelimit-Remaining": {"500"}, "X-Ratelimit-Remaining-Tokens": {"5000"}}, 9, 999, 0, 0},
		{"malformed", 200, http.Header{"X-Ratelimit-Remaining": {"-1"}, "Ratelimit": {"???"}, "Retry-After": {"soon"}}, 9, 999, 0, 3},
		{"429 Retry-After", 429, retryAfter("7"), 1, 1, 7 * time.Second, 0},
		{"429 Retry-After-Ms", 429, http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"9"}}, 1, 1, 1500 * time.Millisecond, 0},
		{"429 HTTP-date", 429, http.Header{"Retry-After": {epoch.Add(-time.Hour + 30*time.Second).UTC().Format(http.TimeFormat)}, "Date": {epoch.Add(-time.Hour).UTC().Format(http.TimeFormat)}}, 1, 1, 30 * time.Second, 0},
		{"429 quota reset", 429, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"12"}}, 0, 1, 12 * time.Second, 0},
		{"429 no hint", 429, nil, 1, 1, httpthrottle.RefusalPause(1, 0), 0},
		{"429 huge", 429, retryAfter("1000000"), 1, 1, 60 * time.Second, 0},
		{"403 remaining 0", 403, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"20"}}, 0, 1, 20 * time.Second, 0},
		{"403", 403, nil, 9, 999, 0, 0},
		{"503 Retry-After", 503, retryAfter("4"), 1, 1, 4 * time.Second, 0},
		{"503", 503, nil, 9, 999, 0, 0},
		{"529 Retry-After", 529, retryAfter("4"), 1, 1, 4 * time.Second, 0},
		{"200 Retry-After", 200, retryAfter("4"), 9, 999, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := clockwork.NewFakeClockAt(epoch)
			rec := newRecorder(t, fc, func(_ int, w http.ResponseWriter, _ *http.Request) {
				for k, v := range tt.h {
					w.Header()[k] = v
				}
				w.WriteHeader(tt.status)
			})
			l := twoBuckets(t, fc)
			tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithRetries(0)))
			httpthrottle.SeedRefusalJitter(tr, 1)
			req, _ := http.NewRequest(http.MethodPost, rec.srv.URL, http.NoBody)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			bs := bucketsOf(l)
			if got := bs[0].Status().Level; got != tt.requests {
				t.Errorf("requests level %v, want %v", got, tt.requests)
			}
			if got := bs[1].Status().Level; got != tt.tokens {
				t.Errorf("tokens level %v, want %v", got, tt.tokens)
			}
			for _, b := range bs {
				until, ok := pausedUntil(b)
				if tt.pause == 0 && ok {
					t.Errorf("%s paused until +%v, want no pause", b.Status().Name, until.Sub(epoch))
				}
				if tt.pause != 0 && (!ok || until.Sub(epoch) != tt.pause) {
					t.Errorf("%s paused until +%v (%v), want +%v", b.Status().Name, until.Sub(epoch), ok, tt.pause)
				}
			}
			if got := tr.Stats().Malformed; got != tt.malformed {
				t.Errorf("%d malformed fields counted, want %d", got, tt.malformed)
			}
		})
	}
}
