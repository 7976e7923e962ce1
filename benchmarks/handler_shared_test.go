package benchmarks

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
)

// BenchmarkLimitHandlerShared measures one request through LimitHandler
// over one shared Limiter: admitted (a bucket that never runs dry) and
// refused (an empty bucket that refills once an hour).
func BenchmarkLimitHandlerShared(b *testing.B) {
	for _, admit := range []bool{true, false} {
		name := "admitted"
		if !admit {
			name = "refused"
		}
		b.Run(name, func(b *testing.B) {
			bk, _ := throttle.New(1<<62, throttle.Per(1e9, time.Second))
			if !admit {
				bk, _ = throttle.New(1, throttle.Per(1, time.Hour))
				bk.TryAcquire(1)
			}
			l, _ := throttle.NewLimiter(bk)
			h := throttle.LimitHandler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), throttle.Shared(l))
			r := httptest.NewRequest(http.MethodGet, "/api/", nil)
			w := &nopWriter{h: http.Header{}}
			serialLoop(b, func() {
				clear(w.h)
				h.ServeHTTP(w, r)
			})
		})
	}
}
