package browsertest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// refusingAPI is a server that refuses every fifth call with a 429 and a
// Retry-After of 3 seconds, and serves the others.
func refusingAPI(t *testing.T) *httptest.Server {
	var calls atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%5 == 0 {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(api.Close)
	return api
}
