package benchmarks

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// handlerLimits is the per-client limit of the LimitHandler benchmarks: 20
// at once, 600 a minute (the README's middleware example).
var handlerLimits = []throttle.Limit{{Name: "requests", Capacity: 20, Rate: throttle.Per(600, time.Minute)}}

// nopWriter is a ResponseWriter that keeps only its header, cleared by the
// benchmark before each request, so that the cost measured is the
// middleware's.
type nopWriter struct {
	h    http.Header
	code int
}

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(code int)        { w.code = code }

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

// keyedHandler is LimitHandler over PerKey(HeaderKey("X-Api-Key")) of a
// Keyed with handlerLimits and opts.
func keyedHandler(clk clockwork.Clock, opts ...throttle.Option) (*throttle.Keyed[string], http.Handler) {
	if clk != nil {
		opts = append(opts, throttle.WithClock(clk))
	}
	k := throttle.NewKeyed(func(string) []throttle.Limit { return handlerLimits }, opts...)
	return k, throttle.LimitHandler(okHandler, throttle.PerKey(k, throttle.HeaderKey("X-Api-Key")))
}

// BenchmarkLimitHandlerPerKey measures one request through LimitHandler
// with PerKey(keyed, HeaderKey("X-Api-Key")), on the real clock, from one
// goroutine, the request and writer reused (the header value set per
// request):
//
//   - keys=hot: 10,000 client keys in steady use, every request admitted
//     (the clients' tokens are there: 20 at once, and each key is called
//     once per 10,000 requests);
//   - keys=distinct: every request a new key (strconv of a counter, one
//     small allocation): the attack of issue 16, each key made on its
//     request; held reports the keys held at the end.
//
// keyedOptions (handler_opts_test.go) adds the options under test.
func BenchmarkLimitHandlerPerKey(b *testing.B) {
	b.Run("keys=hot", func(b *testing.B) {
		k, h := keyedHandler(nil, keyedOptions(0)...)
		keys := keyNames(hotKeys)
		r := httptest.NewRequest(http.MethodGet, "/api/", nil)
		r.Header.Set("X-Api-Key", "")
		w := &nopWriter{h: http.Header{}}
		for _, key := range keys {
			r.Header["X-Api-Key"][0] = key
			h.ServeHTTP(w, r)
		}
		i := 0
		runtime.GC()
		b.ResetTimer()
		serialLoop(b, func() {
			r.Header["X-Api-Key"][0] = keys[i]
			clear(w.h)
			w.code = 0
			h.ServeHTTP(w, r)
			if w.code != http.StatusOK {
				b.Fatalf("key %s: status %d", keys[i], w.code)
			}
			if i++; i == len(keys) {
				i = 0
			}
		})
		b.ReportMetric(float64(k.Len()), "held")
	})
	b.Run("keys=distinct", func(b *testing.B) {
		k, h := keyedHandler(nil, keyedOptions(0)...)
		r := httptest.NewRequest(http.MethodGet, "/api/", nil)
		r.Header.Set("X-Api-Key", "")
		w := &nopWriter{h: http.Header{}}
		var buf []byte
		n := uint64(0)
		runtime.GC()
		b.ResetTimer()
		serialLoop(b, func() {
			n++
			buf = strconv.AppendUint(buf[:0], n, 36)
			r.Header["X-Api-Key"][0] = string(buf)
			clear(w.h)
			w.code = 0
			h.ServeHTTP(w, r)
			if w.code != http.StatusOK && w.code != http.StatusTooManyRequests {
				b.Fatalf("status %d", w.code)
			}
		})
		b.ReportMetric(float64(k.Len()), "held")
	})
}

// attackKeys is the number of distinct keys the attack benchmark sends.
const attackKeys = 1_000_000

// attackCap is the key cap under test in the attack benchmark.
const attackCap = 100_000

// BenchmarkLimitHandlerAttack sends 1,000,000 requests, each with a new
// key, through LimitHandler over a Keyed of handlerLimits (keyedOptions
// gives it a cap of 100,000 keys where the library has one), on a fake
// clock that advances 10 µs per request (an attack at 100,000 requests a
// second for 10 s; a key's limits refill from empty in 2 s). One op is the
// whole scenario; run it with -benchtime 1x. It reports heap-MB, the live
// heap above the empty handler's afterwards (runtime.MemStats.HeapAlloc
// after runtime.GC), and held, Keyed.Len() afterwards.
func BenchmarkLimitHandlerAttack(b *testing.B) {
	var heap, held float64
	for b.Loop() {
		clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		k, h := keyedHandler(clk, keyedOptions(attackCap)...)
		r := httptest.NewRequest(http.MethodGet, "/api/", nil)
		r.Header.Set("X-Api-Key", "")
		w := &nopWriter{h: http.Header{}}
		var buf []byte
		empty := liveHeap()
		for i := range attackKeys {
			buf = strconv.AppendUint(buf[:0], uint64(i)*0x9e3779b97f4a7c15, 36)
			r.Header["X-Api-Key"][0] = string(buf)
			clear(w.h)
			h.ServeHTTP(w, r)
			clk.Advance(10 * time.Microsecond)
		}
		heap = (float64(liveHeap()) - float64(empty)) / (1 << 20)
		held = float64(k.Len())
		runtime.KeepAlive(h)
	}
	b.ReportMetric(heap, "heap-MB")
	b.ReportMetric(held, "held")
}
