package benchmarks

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// handlerLimits is the per-client limit of the Handler benchmarks: 20
// at once, 600 a minute (docs/server.md's middleware example).
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

// keyedHandler is Handler over PerKey(HeaderKey("X-Api-Key")) of a
// Keyed with handlerLimits and opts.
func keyedHandler(clk clockwork.Clock, opts ...throttle.Option) (*throttle.Keyed[string], http.Handler) {
	if clk != nil {
		opts = append(opts, throttle.WithClock(clk))
	}
	k := throttle.NewKeyed(func(string) []throttle.Limit { return handlerLimits }, opts...)
	return k, httpthrottle.Handler(okHandler, httpthrottle.PerKey(k, httpthrottle.HeaderKey("X-Api-Key")))
}

// BenchmarkLimitHandlerPerKey measures one request through Handler
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
// key, through Handler over a Keyed of handlerLimits capped at 100,000
// keys (keyedOptions), on a fake clock that advances 10 µs per request (an
// attack at 100,000 requests a second for 10 s; a key's limits refill from
// empty in 2 s, so about 200,000 attack keys are live at any time), with a
// request from one of 100 legitimate clients after every 100th (each
// client about once a second, a tenth of them from two hot clients over
// their quota). The same legitimate requests are then sent at the same
// instants without the attack. One op is both runs; run it with
// -benchtime 1x. It reports:
//
//   - heap-MB: the live heap after the attack, the handler still live,
//     above the empty handler's (runtime.MemStats.HeapAlloc after
//     runtime.GC); target at most 16;
//   - held, peak-held: Keyed.Len() afterwards and its most, sampled at
//     every legitimate request; target at most the cap;
//   - legit-diff: legitimate answers (status and every header) that differ
//     with and without the attack; target 0 (the benchmark fails
//     otherwise); legit-refused: how many of the 10,000 were 429s.
//
// key=header keys by HeaderKey("X-Api-Key"), key=hashed by
// HashedHeaderKey("X-Api-Key").
func BenchmarkLimitHandlerAttack(b *testing.B) {
	b.Run("key=header", func(b *testing.B) {
		attackBench(b, func(k *throttle.Keyed[string]) http.Handler {
			return httpthrottle.Handler(okHandler, httpthrottle.PerKey(k, httpthrottle.HeaderKey("X-Api-Key")))
		})
	})
	b.Run("key=hashed", func(b *testing.B) {
		attackBench(b, func(k *throttle.Keyed[uint64]) http.Handler {
			return httpthrottle.Handler(okHandler, httpthrottle.PerKey(k, httpthrottle.HashedHeaderKey("X-Api-Key")))
		})
	})
}

func attackBench[K comparable](b *testing.B, handler func(*throttle.Keyed[K]) http.Handler) {
	var heap, held, peak, diff, refused float64
	for b.Loop() {
		var quiet []string
		for _, attack := range []bool{false, true} {
			clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			opts := append(keyedOptions(attackCap), throttle.WithClock(clk))
			k := throttle.NewKeyed(func(K) []throttle.Limit { return handlerLimits }, opts...)
			h := handler(k)
			r := httptest.NewRequest(http.MethodGet, "/api/", nil)
			r.Header.Set("X-Api-Key", "")
			w := &nopWriter{h: http.Header{}}
			var buf []byte
			var answers []string
			n := 0
			empty := liveHeap()
			for i := range attackKeys {
				clk.Advance(10 * time.Microsecond)
				if i%100 == 0 {
					// A legitimate client: every one in turn, or one of
					// two hot ones.
					key := (i / 100) % 100
					if (i/100)%10 == 9 {
						key = (i / 1000) % 2
					}
					r.Header["X-Api-Key"][0] = "client-" + strconv.Itoa(key)
					clear(w.h)
					h.ServeHTTP(w, r)
					answers = append(answers, fmt.Sprint(w.code, w.h))
					peak = max(peak, float64(k.Len()))
					continue
				}
				if !attack {
					continue
				}
				buf = strconv.AppendUint(buf[:0], uint64(i)*0x9e3779b97f4a7c15, 36)
				r.Header["X-Api-Key"][0] = string(buf)
				clear(w.h)
				h.ServeHTTP(w, r)
				n++
			}
			if !attack {
				quiet = answers
				continue
			}
			heap = (float64(liveHeap()) - float64(empty)) / (1 << 20)
			held = float64(k.Len())
			diff, refused = 0, 0
			for i := range answers {
				if answers[i] != quiet[i] {
					if diff == 0 {
						b.Errorf("legitimate request %d: %s with the attack, %s without", i, answers[i], quiet[i])
					}
					diff++
				}
				if strings.HasPrefix(answers[i], "429") {
					refused++
				}
			}
			runtime.KeepAlive(h)
		}
	}
	b.ReportMetric(heap, "heap-MB")
	b.ReportMetric(held, "held")
	b.ReportMetric(peak, "peak-held")
	b.ReportMetric(diff, "legit-diff")
	b.ReportMetric(refused, "legit-refused")
}

// BenchmarkLimitHandlerHashed is BenchmarkLimitHandlerPerKey keyed by
// HashedHeaderKey("X-Api-Key"): the cost of the hash and of uint64 keys.
func BenchmarkLimitHandlerHashed(b *testing.B) {
	for _, distinct := range []bool{false, true} {
		b.Run(fmt.Sprint("distinct=", distinct), func(b *testing.B) {
			k := throttle.NewKeyed(func(uint64) []throttle.Limit { return handlerLimits }, keyedOptions(0)...)
			h := httpthrottle.Handler(okHandler, httpthrottle.PerKey(k, httpthrottle.HashedHeaderKey("X-Api-Key")))
			keys := keyNames(hotKeys)
			r := httptest.NewRequest(http.MethodGet, "/api/", nil)
			r.Header.Set("X-Api-Key", "")
			w := &nopWriter{h: http.Header{}}
			var buf []byte
			n, i := uint64(0), 0
			runtime.GC()
			b.ResetTimer()
			serialLoop(b, func() {
				if distinct {
					n++
					buf = strconv.AppendUint(buf[:0], n, 36)
					r.Header["X-Api-Key"][0] = string(buf)
				} else {
					r.Header["X-Api-Key"][0] = keys[i]
					if i++; i == len(keys) {
						i = 0
					}
				}
				clear(w.h)
				w.code = 0
				h.ServeHTTP(w, r)
			})
			b.ReportMetric(float64(k.Len()), "held")
		})
	}
}

// BenchmarkLimitHandlerDefaultBound is the attack of issue 28 on a Keyed
// made with no options but the fake clock, so with its default key cap
// (524,288, the default of throttle.WithMaxKeys): 10,000,000 requests, each with a new made-up
// key (13 characters), at 100,000 a second on the fake clock (100 s), the
// limit 100 a minute per key (compareLimits; a key is held for a minute
// after its use, so the attack fills the cap in about 5 s and keeps it
// full). Among them, every 1,000th request is from one of 20 established
// clients (held before the attack, each twice a second, over its quota),
// and every 1,000th, offset by 500, from a new client, one of 1,000 in
// turn each first seen after the cap was reached, each once a second within
// its quota. The established clients' requests are then sent at the same
// instants without the attack. One op is both runs; run it with -benchtime
// 1x. It reports:
//
//   - heap-MB: the live heap after the attack, the handler still live,
//     above the empty handler's; peak-heap-MB the most, sampled every
//     1,000,000 requests; target at most 64;
//   - held: Keyed.Len() afterwards (the cap);
//   - new-admitted-%: the new clients' requests admitted, in percent;
//     target at least 90;
//   - old-diff: answers to established clients (status and every header)
//     that differ with and without the attack; target 0 (the benchmark
//     fails otherwise).
func BenchmarkLimitHandlerDefaultBound(b *testing.B) {
	b.Run("key=header", func(b *testing.B) {
		boundBench(b, func(k *throttle.Keyed[string]) http.Handler {
			return httpthrottle.Handler(okHandler, httpthrottle.PerKey(k, httpthrottle.HeaderKey("X-Api-Key")))
		})
	})
	b.Run("key=hashed", func(b *testing.B) {
		boundBench(b, func(k *throttle.Keyed[uint64]) http.Handler {
			return httpthrottle.Handler(okHandler, httpthrottle.PerKey(k, httpthrottle.HashedHeaderKey("X-Api-Key")))
		})
	})
}

func boundBench[K comparable](b *testing.B, handler func(*throttle.Keyed[K]) http.Handler) {
	const (
		requests    = 10_000_000
		established = 20
		newClients  = 1_000
		newFrom     = 1_000_000 // 10 s in, well after the cap is reached
	)
	var heap, peak, held, admittedPct, diff float64
	for b.Loop() {
		var quiet []string
		for _, attack := range []bool{false, true} {
			clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			empty := liveHeap()
			k := throttle.NewKeyed(func(K) []throttle.Limit { return compareLimits }, throttle.WithClock(clk))
			h := handler(k)
			r := httptest.NewRequest(http.MethodGet, "/api/", nil)
			r.Header.Set("X-Api-Key", "")
			w := &nopWriter{h: http.Header{}}
			serve := func(key string) {
				r.Header["X-Api-Key"][0] = key
				clear(w.h)
				w.code = 0
				h.ServeHTTP(w, r)
			}
			for c := range established {
				serve("established-" + strconv.Itoa(c))
			}
			var answers []string
			var buf []byte
			admitted, asked := 0, 0
			peak = 0
			for i := range requests {
				clk.Advance(10 * time.Microsecond)
				switch {
				case i%1000 == 0:
					serve("established-" + strconv.Itoa(i/1000%established))
					answers = append(answers, fmt.Sprint(w.code, w.h))
				case i%1000 == 500 && i >= newFrom:
					// Client j sends once every 1,000 of these: once a second.
					serve("new-" + strconv.Itoa(i/1000%newClients))
					asked++
					if w.code == http.StatusOK {
						admitted++
					}
				case attack:
					buf = strconv.AppendUint(buf[:0], uint64(i)*0x9e3779b97f4a7c15, 36)
					serve(string(buf))
				}
				if attack && i%1_000_000 == 999_999 {
					peak = max(peak, (float64(liveHeap())-float64(empty))/(1<<20))
				}
			}
			if !attack {
				quiet = answers
				continue
			}
			heap = (float64(liveHeap()) - float64(empty)) / (1 << 20)
			held = float64(k.Len())
			admittedPct = 100 * float64(admitted) / float64(asked)
			diff = 0
			for i := range answers {
				if answers[i] != quiet[i] {
					if diff == 0 {
						b.Errorf("established request %d: %s with the attack, %s without", i, answers[i], quiet[i])
					}
					diff++
				}
			}
			runtime.KeepAlive(h)
		}
	}
	b.ReportMetric(heap, "heap-MB")
	b.ReportMetric(peak, "peak-heap-MB")
	b.ReportMetric(held, "held")
	b.ReportMetric(admittedPct, "new-admitted-%")
	b.ReportMetric(diff, "old-diff")
}
