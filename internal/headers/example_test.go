package headers_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/throttlekit/throttle/internal/headers"
)

func ExampleParse() {
	// A 429 from an OpenAI-style API.
	h := http.Header{}
	h.Set("Date", "Sun, 01 Jun 2025 12:00:00 GMT")
	h.Set("Retry-After", "20")
	h.Set("Retry-After-Ms", "1500") // takes precedence over Retry-After
	h.Set("X-Should-Retry", "true")
	h.Set("X-Ratelimit-Limit-Requests", "60")
	h.Set("X-Ratelimit-Remaining-Requests", "59")
	h.Set("X-Ratelimit-Reset-Requests", "1s")
	h.Set("X-Ratelimit-Limit-Tokens", "150000")
	h.Set("X-Ratelimit-Remaining-Tokens", "0")
	h.Set("X-Ratelimit-Reset-Tokens", "23h47m36.648s") // more than maxPause
	h.Set("X-Ratelimit-Remaining", "-1")               // malformed

	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	s := headers.Parse(h, now, time.Minute)

	fmt.Println("retry after:", s.RetryAfter, s.HasRetryAfter)
	fmt.Println("should retry:", *s.ShouldRetry)
	for _, q := range s.Quotas {
		fmt.Printf("%s %s: %d of %d left, reset in %v\n", q.Family, q.Name, q.Remaining, q.Limit, q.Reset)
	}
	fmt.Println("capped:", s.Capped)
	fmt.Println("malformed:", s.Malformed)
	d, _ := s.Pause()
	fmt.Println("pause:", d)
	// Output:
	// retry after: 1.5s true
	// should retry: true
	// openai requests: 59 of 60 left, reset in 1s
	// openai tokens: 0 of 150000 left, reset in 1m0s
	// capped: true
	// malformed: [X-Ratelimit-Remaining]
	// pause: 1.5s
}

func ExampleSetIETF() {
	h := http.Header{}
	headers.SetIETF(h, "permin", 50, time.Minute, 0, 29500*time.Millisecond)
	fmt.Println(h.Get("RateLimit-Policy"))
	fmt.Println(h.Get("RateLimit"))

	s := headers.Parse(h, time.Now(), 0)
	q := s.Quotas[0]
	fmt.Println(q.Name, q.Limit, q.Window, q.Remaining, q.Reset)
	// Output:
	// "permin";q=50;w=60
	// "permin";r=0;t=30
	// permin 50 1m0s 0 30s
}
