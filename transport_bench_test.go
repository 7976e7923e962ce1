package throttle_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
)

// plentiful returns a limiter that always has tokens: the benchmarks
// measure the transport's own work, not waits.
func plentiful(b *testing.B) *throttle.Limiter {
	return newLimiter(b, nil, 1<<60, throttle.Per(1<<40, time.Second))
}

// BenchmarkRoundTrip sends GETs to a local server through a bare
// http.Transport and through a Transport over the same one, with tokens
// available, alternating the two in one loop so that the drift of a noisy
// machine hits both alike. It reports the mean of each and the overhead of
// the Transport in percent of the bare round trip (the target is under
// 2%). The server sends the IETF RateLimit fields, so every response is
// parsed and heeded; "quiet" is a server that sends none.
func BenchmarkRoundTrip(b *testing.B) {
	for _, tt := range []struct {
		name string
		ietf bool
	}{{"ietf", true}, {"quiet", false}} {
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
			tr := throttle.NewTransport(base, throttle.Shared(plentiful(b)))
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
			var bare, throttled time.Duration
			for b.Loop() {
				bare += once(base)
				throttled += once(tr)
			}
			n := float64(b.N)
			b.ReportMetric(float64(bare)/n, "bare-ns/op")
			b.ReportMetric(float64(throttled)/n, "throttled-ns/op")
			b.ReportMetric(100*float64(throttled-bare)/float64(bare), "overhead-%")
		})
	}
}

// stubTransport answers every request at once with a canned response, so
// that BenchmarkTransportOverhead measures only the Transport's own cost.
type stubTransport struct{ header http.Header }

func (s stubTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: s.header, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
}

// BenchmarkTransportOverhead is the Transport's cost per request over a
// base transport that does nothing: the permit, the reading of the
// response's rate-limit headers and the bookkeeping.
func BenchmarkTransportOverhead(b *testing.B) {
	for _, tt := range []struct {
		name   string
		header http.Header
	}{
		{"no-signals", http.Header{"Content-Type": {"text/plain"}, "Date": {"Mon, 02 Jan 2030 03:04:05 GMT"}}},
		{"ietf", http.Header{"Ratelimit-Policy": {`"default";q=1000000;w=1`}, "Ratelimit": {`"default";r=999999;t=1`}}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			tr := throttle.NewTransport(stubTransport{tt.header}, throttle.Shared(plentiful(b)))
			req, _ := http.NewRequest(http.MethodGet, "http://vendor.example/", nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}
