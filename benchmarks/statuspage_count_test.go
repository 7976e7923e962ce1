package benchmarks

import (
	"flag"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/statuspage"
)

var (
	pageEvery = flag.Int("page-every", 100_000, "BenchmarkStatusPageCounted: requests a second of the page's clock, between two refreshes")
	pageBase  = flag.String("page-base", "", "BenchmarkStatusPageCounted: send the requests to this `URL` (a server in another process, such as okServe's) instead of answering them at once")
)

// BenchmarkStatusPageCounted is the cost of the open page in a fixed
// amount of work, for an instruction count of the whole process (valgrind
// --tool=callgrind) that the machine's load does not change: b.N requests
// from one goroutine through a Transport over a base that answers at once,
// and a second of the page's fake clock every -page-every requests. Every
// case first fills the page's histories (a sample a second over five
// minutes), so that each JSON answer is as long as on a page open for
// long. "closed" then closes the page: the requests alone. "open" keeps
// it: at each second its sampler takes a sample, and the test reads the
// JSON as the browser does, of the Transport's limiter alone (the probe
// that tells when the sampler ran is sampled, not listed). "open+observer" also gives the limiter the
// page's Observer. Compare counts of one -test.benchtime Nx. With
// -page-base, the requests make real round trips to a server in another
// process (THROTTLE_BENCH_OK_SERVE=ADDR runs this binary as one), whose
// instructions the count leaves out: a Transport loaded with real calls.
func BenchmarkStatusPageCounted(b *testing.B) {
	for _, c := range []struct {
		name           string
		open, observed bool
	}{{"closed", false, false}, {"open", true, false}, {"open+observer", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			clk := clockwork.NewFakeClockAt(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			page, err := statuspage.New(statuspage.WithClock(clk))
			if err != nil {
				b.Fatal(err)
			}
			defer page.Close()
			var opts []throttle.Option
			if c.observed {
				opts = append(opts, throttle.WithObserver(page.Observer("api")))
			}
			bk, err := throttle.New(math.MaxInt64, throttle.Per(math.MaxInt64, time.Second), append(opts, throttle.WithName("requests"))...)
			if err != nil {
				b.Fatal(err)
			}
			l, _ := throttle.NewLimiter(bk)
			var base http.RoundTripper = okTransport{}
			target := "http://vendor.example/"
			if *pageBase != "" {
				hb := &http.Transport{MaxIdleConnsPerHost: 1}
				defer hb.CloseIdleConnections()
				base, target = hb, *pageBase
			}
			tr, err := httpthrottle.NewTransport(base, httpthrottle.Shared(l))
			if err != nil {
				b.Fatal(err)
			}
			page.Register("api", l)
			pr := newProbe(b)
			page.Register("probe", pr)
			// The sampler's ticker, made as it starts: a second passed
			// before would be lost.
			if err := clk.BlockUntilContext(b.Context(), 1); err != nil {
				b.Fatal(err)
			}
			for range 300 {
				pr.second(clk)
			}
			if !c.open {
				page.Close()
			}
			before := pr.calls.Load()
			refreshes := 0
			req, _ := http.NewRequest(http.MethodGet, target, nil)
			b.ResetTimer()
			// The same instructions a request whether the page is open or
			// not: only a refresh differs.
			left := *pageEvery
			for range b.N {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if left--; left > 0 {
					continue
				}
				left = *pageEvery
				if c.open {
					pr.second(clk)
					readJSON(b, page, "api")
					pr.drain()
					refreshes++
				}
			}
			b.StopTimer()
			// The sampler read the probe at each refresh.
			if got := pr.calls.Load() - before; got < int64(refreshes) {
				b.Fatalf("%d refreshes read the probe %d times: the page did not sample and answer each", refreshes, got)
			}
			b.ReportMetric(float64(refreshes), "refreshes")
		})
	}
}

// probe is a limiter whose Status says when the page's sampler read it.
type probe struct {
	*throttle.Limiter
	calls   atomic.Int64
	sampled chan struct{}
}

func newProbe(b *testing.B) *probe {
	bk, err := throttle.New(100, throttle.Per(100, time.Second), throttle.WithName("requests"))
	if err != nil {
		b.Fatal(err)
	}
	l, _ := throttle.NewLimiter(bk)
	return &probe{Limiter: l, sampled: make(chan struct{}, 1)}
}

func (p *probe) Status(dst []throttle.LimitStatus) []throttle.LimitStatus {
	p.calls.Add(1)
	select {
	case p.sampled <- struct{}{}:
	default:
	}
	return p.Limiter.Status(dst)
}

// second moves clk a second on and waits for the page's sampler to take
// that second's sample, so that no tick is lost.
func (p *probe) second(clk *clockwork.FakeClock) {
	p.drain()
	clk.Advance(time.Second)
	<-p.sampled
}

// drain forgets a read of the probe that was not the sampler's.
func (p *probe) drain() {
	select {
	case <-p.sampled:
	default:
	}
}

// readJSON reads the page's JSON of the limiters named q, as the open page
// does each refresh when its search box holds q.
func readJSON(b *testing.B, page *statuspage.Page, q string) {
	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/throttle/?format=json&q="+q, nil))
	io.Copy(io.Discard, rec.Body)
	if rec.Code != http.StatusOK {
		b.Fatal("the page did not answer")
	}
}

// envOKServe makes the test binary serve 200 with an empty body on the
// address it holds, for BenchmarkStatusPageCounted's -page-base.
const envOKServe = "THROTTLE_BENCH_OK_SERVE"

// runOKServe serves until the process is killed.
func runOKServe(addr string) {
	err := http.ListenAndServe(addr, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	panic(err)
}
