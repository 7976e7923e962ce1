package httpthrottle_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// A server limits each client by its API key, which the limiter keeps only
// as a hash, and caps the clients it tracks so that made-up keys cannot
// grow its memory: docs/server.md's middleware example.
func ExampleHashedHeaderKey() {
	perClient := throttle.NewKeyed(func(uint64) []throttle.Limit {
		return []throttle.Limit{{Name: "requests", Capacity: 20, Rate: throttle.Per(600, time.Minute)}}
	}, throttle.WithMaxKeys(100_000))
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	h := httpthrottle.Handler(api, httpthrottle.PerKey(perClient, httpthrottle.HashedHeaderKey("X-Api-Key")))

	send := func(key string) int {
		r := httptest.NewRequest(http.MethodGet, "/api/", nil)
		r.Header.Set("X-Api-Key", key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	codes := map[int]int{}
	for range 21 {
		codes[send("sk-alice")]++
	}
	fmt.Println("alice:", codes)
	fmt.Println("bob:", send("sk-bob"))
	fmt.Println("clients held:", perClient.Len())
	// Output:
	// alice: map[200:20 429:1]
	// bob: 200
	// clients held: 2
}
