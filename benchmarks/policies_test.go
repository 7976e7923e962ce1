package benchmarks

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// BenchmarkManyPolicies is a GET over loopback whose response carries n
// RateLimit-Policy items, one a line, with a RateLimit for each: "plain"
// without the transport, "transport" through it. net/http reads and
// canonicalises every line either way; the transport must add at most as
// much again (issue 25: ≤ 2x). Run the two alternated (-count) and compare
// medians.
func BenchmarkManyPolicies(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		h := http.Header{}
		for i := range n {
			name := `"p` + strconv.Itoa(i) + `"`
			h.Add("RateLimit-Policy", name+";q=100;w=60")
			h.Add("RateLimit", name+";r=50;t=30")
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range h {
				w.Header()[k] = v
			}
			w.WriteHeader(http.StatusOK)
		}))
		bucket, err := throttle.New(1<<40, throttle.Per(1<<40, time.Second), throttle.WithName("requests"))
		if err != nil {
			b.Fatal(err)
		}
		l, _ := throttle.NewLimiter(bucket)
		plain := &http.Client{Transport: &http.Transport{MaxResponseHeaderBytes: 64 << 20}}
		through := &http.Client{Transport: must(httpthrottle.NewTransport(&http.Transport{MaxResponseHeaderBytes: 64 << 20}, httpthrottle.Shared(l)))}
		for _, c := range []struct {
			name   string
			client *http.Client
		}{{"plain", plain}, {"transport", through}} {
			b.Run("n="+strconv.Itoa(n)+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					resp, err := c.client.Get(srv.URL)
					if err != nil {
						b.Fatal(err)
					}
					resp.Body.Close()
				}
			})
		}
		srv.Close()
	}
}
