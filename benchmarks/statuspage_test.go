package benchmarks

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/statuspage"
)

// okTransport answers every request at once with an empty 200.
type okTransport struct{}

func (okTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody}, nil
}

// BenchmarkStatusPage is the cost of watching a loaded Transport: every
// goroutine sends requests through one Transport over a base that answers
// at once. "closed" has no page; "open" registers the limiter on a
// statuspage.Page and reads the page's JSON once a second, as the open
// page does (spending estimated from the levels); "open+observer" also
// gives the limiter the page's Observer, which counts every grant.
// cpu-ns/op is the process's CPU time a request, all threads: the
// target, open at most 2% above closed (run with -benchtime 5s or more,
// for several refreshes).
func BenchmarkStatusPage(b *testing.B) {
	for _, c := range []struct {
		name           string
		open, observed bool
	}{{"closed", false, false}, {"open", true, false}, {"open+observer", true, true}} {
		open := c.open
		b.Run(c.name, func(b *testing.B) {
			var opts []throttle.Option
			var page *statuspage.Page
			if open {
				var err error
				if page, err = statuspage.New(); err != nil {
					b.Fatal(err)
				}
				defer page.Close()
			}
			if c.observed {
				opts = append(opts, throttle.WithObserver(page.Observer("api")))
			}
			bk, err := throttle.New(math.MaxInt64, throttle.Per(math.MaxInt64, time.Second), append(opts, throttle.WithName("requests"))...)
			if err != nil {
				b.Fatal(err)
			}
			l, _ := throttle.NewLimiter(bk)
			tr, err := httpthrottle.NewTransport(okTransport{}, httpthrottle.Shared(l))
			if err != nil {
				b.Fatal(err)
			}
			stop, done := make(chan struct{}), make(chan struct{})
			if open {
				page.Register("api", l)
				go func() {
					defer close(done)
					t := time.NewTicker(time.Second)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
						}
						rec := httptest.NewRecorder()
						page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/throttle/?format=json", nil))
						io.Copy(io.Discard, rec.Body)
						if rec.Code != http.StatusOK {
							b.Error("the page did not answer")
						}
					}
				}()
			} else {
				close(done)
			}
			before := readUsage(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				req, _ := http.NewRequest(http.MethodGet, "http://vendor.example/", nil)
				for pb.Next() {
					resp, err := tr.RoundTrip(req)
					if err != nil {
						b.Error(err)
						return
					}
					resp.Body.Close()
				}
			})
			b.StopTimer()
			after := readUsage(b)
			close(stop)
			<-done
			b.ReportMetric(float64(after.cpu-before.cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
