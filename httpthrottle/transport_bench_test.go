package httpthrottle_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// plentiful returns a limiter that always has tokens: the benchmarks
// measure the transport's own work, not waits.
func plentiful(b *testing.B) *throttle.Limiter {
	return newLimiter(b, nil, 1<<60, throttle.Per(1<<40, time.Second))
}

// BenchmarkRoundTrip sends GETs to a local server through a bare
// http.Transport and through a wrapper over the same one, with tokens
// available, alternating the two (and which goes first) in one loop so
// that the drift of a noisy machine hits both alike. It reports the median
// of each and the wrapper's overhead in percent of the bare round trip
// (the target for the Transport is under 2%); see reportOverhead.
//
// The wrappers: "transport" against a server that sends no rate-limit
// fields, "transport-ietf" against one that sends the IETF RateLimit
// fields (so every response is parsed and heeded), and "do-nothing", a
// RoundTripper that only calls the base: the floor of this way of
// measuring, as switching between two code paths costs something of its
// own.
func BenchmarkRoundTrip(b *testing.B) {
	for _, tt := range []struct {
		name string
		ietf bool
		wrap func(base http.RoundTripper) http.RoundTripper
	}{
		{"do-nothing", false, func(base http.RoundTripper) http.RoundTripper { return passThrough{base} }},
		{"transport", false, func(base http.RoundTripper) http.RoundTripper {
			return must(httpthrottle.NewTransport(base, httpthrottle.Shared(plentiful(b))))
		}},
		{"transport-ietf", true, func(base http.RoundTripper) http.RoundTripper {
			return must(httpthrottle.NewTransport(base, httpthrottle.Shared(plentiful(b))))
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.ietf {
					w.Header().Set("Ratelimit-Policy", `"default";q=1000000;w=1`)
					w.Header().Set("Ratelimit", `"default";r=999999;t=1`)
				}
				io.WriteString(w, "ok")
			}))
			defer srv.Close()
			base := newBase(b)
			wrapped := tt.wrap(base)
			req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
			if err != nil {
				b.Fatal(err)
			}
			once := func(rt http.RoundTripper) time.Duration {
				start := time.Now()
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return time.Since(start)
			}
			once(base) // open the connection
			var bare, over []time.Duration
			first := true
			for b.Loop() {
				if first {
					bare = append(bare, once(base))
					over = append(over, once(wrapped))
				} else {
					over = append(over, once(wrapped))
					bare = append(bare, once(base))
				}
				first = !first
			}
			reportOverhead(b, bare, over)
		})
	}
}

// reportOverhead reports the overhead of over against bare, paired by
// index. The headline is the median of the pairs' differences over the
// median bare round trip: on a shared machine a round trip now and then
// takes a millisecond for reasons of its own (a GC cycle, a descheduled
// thread), and those outliers, landing on either side at random, swing
// a mean by several percent, far more than a microsecond of real cost.
// The means are reported too.
func reportOverhead(b *testing.B, bare, over []time.Duration) {
	diff := make([]time.Duration, len(bare))
	var sumBare, sumOver time.Duration
	for i := range bare {
		diff[i] = over[i] - bare[i]
		sumBare += bare[i]
		sumOver += over[i]
	}
	medBare := median(bare)
	b.ReportMetric(float64(medBare), "bare-ns/op")
	b.ReportMetric(float64(median(over)), "wrapped-ns/op")
	b.ReportMetric(100*float64(median(diff))/float64(medBare), "overhead-%")
	b.ReportMetric(100*float64(sumOver-sumBare)/float64(sumBare), "mean-overhead-%")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

type passThrough struct{ base http.RoundTripper }

func (p passThrough) RoundTrip(r *http.Request) (*http.Response, error) { return p.base.RoundTrip(r) }

// stubTransport answers every request at once with a canned response, so
// that BenchmarkTransportOverhead measures only the Transport's own cost.
type stubTransport struct{ header http.Header }

func (s stubTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: s.header, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
}

// BenchmarkTransportOverhead is the Transport's cost per request over a
// base transport that does nothing: the permit, the reading of the
// response's rate-limit headers and the bookkeeping. "per-key" spreads the
// requests over eight API keys of a Keyed (PerKey), so that each request's
// Gate differs from the last one's.
func BenchmarkTransportOverhead(b *testing.B) {
	quiet := http.Header{"Content-Type": {"text/plain"}, "Date": {"Mon, 02 Jan 2030 03:04:05 GMT"}}
	for _, tt := range []struct {
		name   string
		header http.Header
		keys   int
	}{
		{"no-signals", quiet, 0},
		{"ietf", http.Header{"Ratelimit-Policy": {`"default";q=1000000;w=1`}, "Ratelimit": {`"default";r=999999;t=1`}}, 0},
		{"per-key", quiet, 8},
	} {
		b.Run(tt.name, func(b *testing.B) {
			pick := httpthrottle.Shared(plentiful(b))
			if tt.keys > 0 {
				k := throttle.NewKeyed(func(string) []throttle.Limit {
					return []throttle.Limit{{Name: "requests", Capacity: 1 << 60, Rate: throttle.Per(1<<40, time.Second)}}
				})
				pick = httpthrottle.PerKey(k, httpthrottle.HeaderKey("Authorization"))
			}
			tr := must(httpthrottle.NewTransport(stubTransport{tt.header}, pick))
			reqs := make([]*http.Request, max(tt.keys, 1))
			for i := range reqs {
				reqs[i], _ = http.NewRequest(http.MethodGet, "http://vendor.example/", nil)
				reqs[i].Header.Set("Authorization", "Bearer key-"+string(rune('a'+i)))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				resp, err := tr.RoundTrip(reqs[i])
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if i++; i == len(reqs) {
					i = 0
				}
			}
		})
	}
}
