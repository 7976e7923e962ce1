package benchmarks

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/go-chi/httprate"
	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// compareLimits is the limit of the middleware comparison, the same for
// every library: 100 a minute per key, the key read from X-Api-Key.
var compareLimits = []throttle.Limit{{Name: "requests", Capacity: 100, Rate: throttle.Per(100, time.Minute)}}

// compareHotKeys is how many keys the keys=10k scenario cycles through:
// each is called once per 10,000 requests, so none of the libraries refuses
// one in a run of up to 1,000,000 requests.
const compareHotKeys = 10_000

// apiKey is the key function every library is given.
func apiKey(r *http.Request) (string, error) {
	if v := r.Header["X-Api-Key"]; len(v) > 0 {
		return v[0], nil
	}
	return "", nil
}

// compareMiddlewares makes, afresh for each run, the middleware of each
// library over okHandler. Each is built as its documentation shows, with
// the key function above.
var compareMiddlewares = []struct {
	name string
	make func(b *testing.B, opts ...throttle.Option) http.Handler // opts: the Keyed's, for ours
}{
	{"throttle", func(b *testing.B, opts ...throttle.Option) http.Handler {
		k := throttle.NewKeyed(func(string) []throttle.Limit { return compareLimits }, opts...)
		return httpthrottle.Handler(okHandler, httpthrottle.PerKey(k, httpthrottle.HeaderKey("X-Api-Key")))
	}},
	{"throttle-hashed", func(b *testing.B, opts ...throttle.Option) http.Handler {
		k := throttle.NewKeyed(func(uint64) []throttle.Limit { return compareLimits }, opts...)
		return httpthrottle.Handler(okHandler, httpthrottle.PerKey(k, httpthrottle.HashedHeaderKey("X-Api-Key")))
	}},
	{"golimiter", func(b *testing.B, _ ...throttle.Option) http.Handler {
		store, err := memorystore.New(&memorystore.Config{Tokens: 100, Interval: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { store.Close(b.Context()) })
		m, err := httplimit.NewMiddleware(store, apiKey)
		if err != nil {
			b.Fatal(err)
		}
		return m.Handle(okHandler)
	}},
	{"httprate", func(b *testing.B, _ ...throttle.Option) http.Handler {
		return httprate.Limit(100, time.Minute, httprate.WithKeyFuncs(apiKey))(okHandler)
	}},
}

// BenchmarkMiddleware compares Handler over PerKey with the rate-limit
// middleware Go servers use, at the same limit (compareLimits), each request
// straight into ServeHTTP from one goroutine, the request and writer reused:
//
//   - keys=hot: one key, spent before the run, every request refused (429);
//   - keys=10k: 10,000 keys in turn, every request admitted (200);
//   - keys=distinct: every request a new key (strconv of a counter, one
//     small allocation, the same for every library).
//
// It reports, besides the usual figures, "cpu-ns/op": the process's CPU
// time per request, all threads (the garbage collector's included). The
// libraries run one after another within a scenario, so run the benchmark
// several times and compare ratios within a run (see README.md).
func BenchmarkMiddleware(b *testing.B) {
	for _, scen := range []string{"hot", "10k", "distinct"} {
		for _, mw := range compareMiddlewares {
			b.Run("keys="+scen+"/lib="+mw.name, func(b *testing.B) {
				h := mw.make(b)
				r := httptest.NewRequest(http.MethodGet, "/api/", nil)
				r.Header.Set("X-Api-Key", "")
				w := &nopWriter{h: http.Header{}}
				serve := func(want int) {
					clear(w.h)
					w.code = 0
					h.ServeHTTP(w, r)
					if want != 0 && w.code != want {
						b.Fatalf("%s, key %q: status %d, want %d", mw.name, r.Header["X-Api-Key"][0], w.code, want)
					}
				}
				var op func()
				switch scen {
				case "hot":
					r.Header["X-Api-Key"][0] = "hot-client"
					for range 100 {
						serve(http.StatusOK)
					}
					serve(http.StatusTooManyRequests)
					op = func() { serve(http.StatusTooManyRequests) }
				case "10k":
					keys := keyNames(compareHotKeys)
					for _, key := range keys {
						r.Header["X-Api-Key"][0] = key
						serve(http.StatusOK)
					}
					i := 0
					op = func() {
						r.Header["X-Api-Key"][0] = keys[i]
						serve(http.StatusOK)
						if i++; i == len(keys) {
							i = 0
						}
					}
				case "distinct":
					var buf []byte
					n := uint64(0)
					op = func() {
						n++
						buf = strconv.AppendUint(buf[:0], n, 36)
						r.Header["X-Api-Key"][0] = string(buf)
						serve(http.StatusOK)
					}
				}
				runtime.GC()
				b.ReportAllocs()
				begin := readUsage(b)
				n := 0
				b.ResetTimer()
				for b.Loop() {
					op()
					n++
				}
				b.ReportMetric(float64(readUsage(b).cpu-begin.cpu)/float64(n), "cpu-ns/op")
			})
		}
	}
}

// heapKeys is how many distinct keys BenchmarkMiddlewareHeap sends.
const heapKeys = 1_000_000

// BenchmarkMiddlewareHeap sends 1,000,000 requests, each with a new key
// (strconv of a counter in base 36, made per request as a server makes each
// header value), through each library's middleware and reports "B/key": the
// live heap afterwards, the middleware still live, above that before, per
// key (runtime.MemStats.HeapAlloc after two runtime.GC); the key strings a
// library keeps count as its own. Ours is given a key cap of 1,000,000
// (WithMaxKeys), above its default, so that it holds every key, as the
// others do. Run it with -benchtime 1x.
func BenchmarkMiddlewareHeap(b *testing.B) {
	for _, mw := range compareMiddlewares {
		b.Run("lib="+mw.name, func(b *testing.B) {
			var perKey float64
			for b.Loop() {
				r := httptest.NewRequest(http.MethodGet, "/api/", nil)
				r.Header.Set("X-Api-Key", "")
				w := &nopWriter{h: http.Header{}}
				var buf []byte
				empty := liveHeap()
				h := mw.make(b, throttle.WithMaxKeys(heapKeys))
				for i := range heapKeys {
					buf = strconv.AppendUint(buf[:0], uint64(i), 36)
					r.Header["X-Api-Key"][0] = string(buf)
					clear(w.h)
					w.code = 0
					h.ServeHTTP(w, r)
					if w.code != http.StatusOK {
						b.Fatalf("key %d: status %d", i, w.code)
					}
				}
				r.Header["X-Api-Key"][0] = ""
				perKey = (float64(liveHeap()) - float64(empty)) / heapKeys
				runtime.KeepAlive(h)
			}
			b.ReportMetric(perKey, "B/key")
		})
	}
}
