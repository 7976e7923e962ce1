package benchmarks

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// BenchmarkLimitHandlerShared measures one request through Handler
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
			h := httpthrottle.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), httpthrottle.Shared(l))
			r := httptest.NewRequest(http.MethodGet, "/api/", nil)
			w := &nopWriter{h: http.Header{}}
			serialLoop(b, func() {
				clear(w.h)
				h.ServeHTTP(w, r)
			})
		})
	}
}

// BenchmarkLimitHandlerHeldKey measures one request through Handler
// over PerKey on a key that has a Limiter of its own (Keyed.Limiter was
// called for it, as RequestPermit does), which Handler decides on as
// on a shared one: admitted, a bucket that never runs dry.
func BenchmarkLimitHandlerHeldKey(b *testing.B) {
	k := throttle.NewKeyed(func(string) []throttle.Limit {
		return []throttle.Limit{{Name: "requests", Capacity: 1 << 62, Rate: throttle.Per(1e9, time.Second)}}
	})
	l := k.Limiter("a")
	if l == nil {
		b.Fatal("no Limiter for the key")
	}
	h := httpthrottle.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), httpthrottle.PerKey(k, httpthrottle.HeaderKey("X-Api-Key")))
	r := httptest.NewRequest(http.MethodGet, "/api/", nil)
	r.Header.Set("X-Api-Key", "a")
	w := &nopWriter{h: http.Header{}}
	serialLoop(b, func() {
		clear(w.h)
		w.code = 0
		h.ServeHTTP(w, r)
		if w.code != 0 && w.code != http.StatusOK {
			b.Fatalf("status %d", w.code)
		}
	})
	runtime.KeepAlive(l) // the key keeps its Limiter while one is in use
}
