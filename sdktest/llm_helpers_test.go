package sdktest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
)

// llmLimiter returns docs/llm.md's limiter for an LLM API: "requests" and
// "tokens" buckets of the given capacities, each refilled over per.
func llmLimiter(t testing.TB, requests, tokens int64, per time.Duration) *throttle.Limiter {
	t.Helper()
	r, err := throttle.New(requests, throttle.Per(requests, per), throttle.WithName("requests"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := throttle.New(tokens, throttle.Per(tokens, per), throttle.WithName("tokens"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := throttle.NewLimiter(r, tok)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// llmClient is docs/llm.md's setup: the Transport with an llm.Config over a base
// of the test's own.
func llmClient(t testing.TB, l *throttle.Limiter, opts ...httpthrottle.Option) (*http.Client, *httpthrottle.Transport) {
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), append([]httpthrottle.Option{httpthrottle.WithAccounting(llm.Config{})}, opts...)...))
	return &http.Client{Transport: tr}, tr
}

// quotaFloor is the least time a token quota of the given capacity and
// rate (tokens a second) needs to admit n calls that each reserve reserve
// tokens (at most the capacity) and use used, when each is settled the
// moment it is admitted, as the vendor settles them: the time the quota
// itself needs, which no client can beat.
func quotaFloor(capacity, rate float64, n int, reserve, used float64) time.Duration {
	level, t := capacity, 0.0
	for range n {
		r := min(reserve, capacity)
		if level < r {
			t += (r - level) / rate
			level = r
		}
		level -= used
	}
	return time.Duration(t * float64(time.Second))
}
