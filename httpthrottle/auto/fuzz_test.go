package auto

import (
	"github.com/throttlekit/throttle"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzAutoResponses feeds whole responses, a status and a header block of
// "Name: value" lines, into a Limiter's learning, twice over (the
// second time with the status it was given, the first with 200), and
// checks that nothing panics, that what is learned stays within its
// bounds (checkBounds), that no pause reaches past the MaxPause, and that
// the limiter it hands out still answers for a call.
func FuzzAutoResponses(f *testing.F) {
	f.Add(200, "RateLimit-Policy: \"a\";q=10;w=1, \"requests\";q=100;w=60")
	f.Add(200, "RateLimit-Policy: \"p\";q=10;w=1\nX-Ratelimit-Limit-Requests: 600\nX-Ratelimit-Remaining-Requests: 599")
	f.Add(200, "RateLimit-Policy: \"p\";q=10;w=1\nX-Ratelimit-Limit: 5000\nX-Ratelimit-Remaining: 4999\nX-Ratelimit-Resource: core")
	f.Add(429, "RateLimit-Policy: \"p\";q=10;w=1\nRateLimit: \"p\";r=0;t=1\nRetry-After: 1e12")
	f.Add(429, "X-Ratelimit-Limit-Tokens: 1000\nX-Ratelimit-Remaining-Tokens: 0\nX-Ratelimit-Reset-Tokens: 6m0s")
	f.Add(200, "Anthropic-Ratelimit-Input-Tokens-Limit: 4000\nAnthropic-Ratelimit-Input-Tokens-Remaining: 3000")
	f.Add(429, "Retry-After: 1000000000000\nRateLimit-Policy: \"x\";q=1;w=1")
	f.Add(429, "RateLimit-Policy: \"p\";q=10;w=1")
	f.Fuzz(func(t *testing.T, status int, block string) {
		if status < 100 || status > 999 {
			status = 200
		}
		h := http.Header{}
		for line := range strings.SplitSeq(block, "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok || k == "" {
				continue
			}
			h.Add(http.CanonicalHeaderKey(strings.TrimSpace(k)), strings.TrimSpace(v))
		}
		a, clk := newAutoFake(t, Range(throttle.Per(1, time.Second), throttle.Inf))
		var err error
		req := get(t, "https://api.example.com/v1/x")
		tell(t, a, clk, req, 200, h)
		l := tell(t, a, clk, req, status, h)
		for _, b := range l.bs {
			if u, ok := pausedUntil(b); ok && u.Sub(clk.Now()) > defaultMaxPause {
				t.Fatalf("paused for %v; MaxPause is %v", u.Sub(clk.Now()), defaultMaxPause)
			}
		}
		checkBounds(t, a)
		clk.Advance(defaultMaxPause)
		l, err = a.limiterOf(req)
		if err != nil {
			t.Fatal(err)
		}
		costs := make([]int64, len(l.bs))
		for i := range costs {
			costs[i] = 1
		}
		if _, err := l.WaitTime(costs...); err != nil {
			t.Fatalf("a call on the learned limits: %v", err)
		}
	})
}
