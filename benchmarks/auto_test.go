package benchmarks

import (
	"context"
	"fmt"
	"io"
	"math"

	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
)

// The harness of issue 14: a loopback vendor enforces one quota (50
// requests/s, burst 50) for N independent clients, each its own http.Client
// with the same work, and answers in one of four dialects. Auto() is
// compared with go-retryablehttp's exponential back-off on the same work.
//
// The full table runs in real time for a few minutes; it runs only with
// THROTTLE_AUTO_TABLE=1 (see README.md). Without it a smoke version runs:
// three clients, one dialect, a second and a half.

const (
	vendorRate  = 50 // requests per second
	vendorBurst = 50
)

// dialect is what the vendor tells its clients.
type dialect int

const (
	dialectIETF       dialect = iota // RateLimit-Policy and RateLimit, Retry-After on 429
	dialectOpenAI                    // x-ratelimit-*-requests per minute, Retry-After on 429
	dialectRetryAfter                // Retry-After on 429, nothing else
	dialectBare                      // a bare 429
)

func (d dialect) String() string {
	return [...]string{"IETF", "OpenAI", "Retry-After only", "bare 429"}[d]
}

// vendor is the loopback API: one token bucket for everyone.
type vendor struct {
	dialect     dialect
	rate, burst int // requests per second, and the bucket's size
	bucket      *throttle.Bucket
	ok, refused atomic.Int64
	mu          sync.Mutex
	refusedAt   []time.Duration // since start
	okAt        []time.Duration
	start       time.Time
}

func newVendor(d dialect) *vendor { return newVendorShape(d, vendorRate, vendorBurst) }

// newVendorShape is a vendor of rate requests per second with a bucket of
// burst.
func newVendorShape(d dialect, rate, burst int) *vendor {
	b, err := throttle.New(int64(burst), throttle.Per(int64(rate), time.Second))
	if err != nil {
		panic(err)
	}
	return &vendor{dialect: d, rate: rate, burst: burst, bucket: b, start: time.Now()}
}

func (v *vendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	ok, _ := v.bucket.TryAcquire(1)
	level := v.bucket.Status().Level
	remaining := max(int64(math.Floor(level)), 0)
	toFull := time.Duration((float64(v.burst) - level) / float64(v.rate) * float64(time.Second))
	h := w.Header()
	switch v.dialect {
	case dialectIETF:
		// The policy states the rate over a second; the bucket may hold
		// more or less than a second of it.
		h.Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=1`, v.rate))
		h.Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=%d`, remaining, int64(math.Ceil(toFull.Seconds()))))
	case dialectOpenAI:
		h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(v.rate*60))
		h.Set("X-Ratelimit-Remaining-Requests", strconv.FormatInt(remaining, 10))
		h.Set("X-Ratelimit-Reset-Requests", toFull.Round(time.Millisecond).String())
	}
	if !ok {
		v.refused.Add(1)
		v.mu.Lock()
		v.refusedAt = append(v.refusedAt, time.Since(v.start))
		v.mu.Unlock()
		if v.dialect != dialectBare {
			wait, _ := v.bucket.WaitTime(1)
			h.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10))
		}
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":"rate limited"}`)
		return
	}
	v.ok.Add(1)
	v.mu.Lock()
	v.okAt = append(v.okAt, time.Since(v.start))
	v.mu.Unlock()
	io.WriteString(w, `{"ok":true}`)
}

// histogram returns the 429s and the successes per half second since the
// start.
func (v *vendor) histogram() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var counts []int
	for _, at := range v.refusedAt {
		i := int(at / (500 * time.Millisecond))
		for len(counts) <= i {
			counts = append(counts, 0)
		}
		counts[i]++
	}
	var oks []int
	for _, at := range v.okAt {
		i := int(at / (500 * time.Millisecond))
		for len(oks) <= i {
			oks = append(oks, 0)
		}
		oks[i]++
	}
	return fmt.Sprint(counts, " ok ", oks)
}

// contender is a client library under test: it returns one client's
// do function and a cleanup.
type contender struct {
	name string
	make func() (do func(ctx context.Context, url string) error, stop func(), info func() string)
}

func baseTransport(workers int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = workers
	return t
}

// callOK reads and closes a response, and says whether the call
// succeeded.
func callOK(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func autoContender(workers int) contender {
	return autoContenderWith(workers, "auto.New()", func() []auto.Option { return nil })
}

// autoContenderWith is Auto with the options opts returns, for each
// client.
func autoContenderWith(workers int, name string, opts func() []auto.Option) contender {
	return contender{name: name, make: func() (func(context.Context, string) error, func(), func() string) {
		base := baseTransport(workers)
		learned := must(auto.New(opts()...))
		c := &http.Client{Transport: must(httpthrottle.NewTransport(base, learned))}
		return func(ctx context.Context, url string) error {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				req.Header.Set("Authorization", "Bearer sk-shared")
				return callOK(c.Do(req))
			}, base.CloseIdleConnections, func() string {
				var b strings.Builder
				for _, q := range learned.Stats() {
					for _, l := range q.Limits {
						fmt.Fprintf(&b, "%.1f/s", float64(l.Rate.Tokens())/l.Rate.Period().Seconds())
					}
					fmt.Fprintf(&b, " %d 429s", q.Throttled)
				}
				return b.String()
			}
	}}
}

func retryableContender(workers int) contender {
	return contender{name: "go-retryablehttp", make: func() (func(context.Context, string) error, func(), func() string) {
		base := baseTransport(workers)
		c := retryablehttp.NewClient()
		c.HTTPClient = &http.Client{Transport: base}
		c.Logger = nil
		return func(ctx context.Context, url string) error {
			req, _ := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			req.Header.Set("Authorization", "Bearer sk-shared")
			return callOK(c.Do(req))
		}, base.CloseIdleConnections, func() string { return "" }
	}}
}

// outcome is one run of one contender.
type outcome struct {
	refused, failed int64
	elapsed         time.Duration
	floor           time.Duration
	when            string   // 429s per half second, from the start
	clients         []string // each client's end, and what it learned
}

// runVendor has n clients of c make perClient calls each, workers at a
// time, against a fresh vendor speaking d.
func runVendor(t testing.TB, d dialect, c contender, n, perClient, workers int) outcome {
	return runOn(t, newVendor(d), c, n, perClient, workers)
}

// runOn is runVendor against the vendor v.
func runOn(t testing.TB, v *vendor, c contender, n, perClient, workers int) outcome {
	return runHandler(t, v, v, float64(v.rate), c, n, perClient, workers)
}

// refusals is what runHandler reads of a server: its 429s and when.
type refusals interface {
	refusedCount() int64
	histogram() string
	reset()
}

func (v *vendor) refusedCount() int64 { return v.refused.Load() }
func (v *vendor) reset()              { v.start = time.Now() }

// runHandler has n clients of c make perClient calls each, workers at a
// time, against h, whose quota is rate requests per second: the floor is
// the calls at that rate.
func runHandler(t testing.TB, h http.Handler, v refusals, rate float64, c contender, n, perClient, workers int) outcome {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadHeaderTimeout = 10 * time.Second
	srv.Start()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var failed atomic.Int64
	var wg sync.WaitGroup
	v.reset()
	start := time.Now()
	clients := make([]string, n)
	for i := range n {
		do, stop, info := c.make()
		calls := make(chan struct{}, perClient)
		for range perClient {
			calls <- struct{}{}
		}
		close(calls)
		var cw sync.WaitGroup
		for range workers {
			cw.Add(1)
			go func() {
				defer cw.Done()
				for range calls {
					if err := do(ctx, srv.URL+"/v1/call"); err != nil {
						failed.Add(1)
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			cw.Wait()
			clients[i] = fmt.Sprintf("%.1fs %s", time.Since(start).Seconds(), info())
			stop()
			wg.Done()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	total := n * perClient
	return outcome{
		refused: v.refusedCount(),
		failed:  failed.Load(),
		elapsed: elapsed,
		floor:   time.Duration(float64(total) / rate * float64(time.Second)),
		when:    v.histogram(),
		clients: clients,
	}
}

func TestAutoVendorSmoke(t *testing.T) {
	o := runVendor(t, dialectIETF, autoContender(2), 3, 25, 2)
	t.Logf("IETF, 3 clients x 25 calls: %d 429s, %d failed, %v (floor %v)", o.refused, o.failed, o.elapsed, o.floor)
	if o.failed != 0 {
		t.Errorf("%d calls failed", o.failed)
	}
}

// TestAutoVendorTable prints the table of benchmarks/README.md.
// THROTTLE_AUTO_ROWS=2,3 picks rows by index, THROTTLE_AUTO_ONLY=1 skips
// go-retryablehttp, THROTTLE_AUTO_TRACE=1 logs each Auto client's end: when
// it finished, its learned rate and its 429s.
func TestAutoVendorTable(t *testing.T) {
	if os.Getenv("THROTTLE_AUTO_TABLE") == "" {
		t.Skip("THROTTLE_AUTO_TABLE=1 runs the real-time table (minutes)")
	}
	const workers = 4
	type row struct {
		d    dialect
		n    int
		per  int
		goal bool
	}
	rows := []row{
		{dialectIETF, 10, 50, true},
		{dialectOpenAI, 10, 50, true},
		{dialectRetryAfter, 10, 50, true},
		{dialectBare, 10, 50, true},
		{dialectIETF, 50, 10, true},
		{dialectRetryAfter, 50, 10, false},
		{dialectBare, 50, 10, false},
	}
	if only := os.Getenv("THROTTLE_AUTO_ROWS"); only != "" {
		var keep []row
		for i, r := range rows {
			if strings.Contains(","+only+",", ","+strconv.Itoa(i)+",") {
				keep = append(keep, r)
			}
		}
		rows = keep
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| dialect | N | calls | go-retryablehttp 429s | failed | time/floor | Auto() 429s | failed | time/floor | 429s vs retryablehttp |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		var base outcome
		if os.Getenv("THROTTLE_AUTO_ONLY") == "" {
			base = runVendor(t, r.d, retryableContender(workers), r.n, r.per, workers)
		}
		auto := runVendor(t, r.d, autoContender(workers), r.n, r.per, workers)
		ratio, baseTime := 0.0, 0.0
		if base.floor > 0 {
			baseTime = float64(base.elapsed) / float64(base.floor)
		}
		if base.refused > 0 {
			ratio = float64(auto.refused) / float64(base.refused)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %.2f | %d | %d | %.2f | %.1f%% |\n",
			r.d, r.n, r.n*r.per, base.refused, base.failed, baseTime,
			auto.refused, auto.failed, float64(auto.elapsed)/float64(auto.floor), 100*ratio)
		t.Logf("%s N=%d: base %+v auto %+v", r.d, r.n, base, auto)
		if os.Getenv("THROTTLE_AUTO_TRACE") != "" {
			t.Logf("%s N=%d: Auto clients: %s", r.d, r.n, strings.Join(auto.clients, "; "))
		}
	}
	t.Log("\n" + b.String())
}

// TestAutoVendorConverge drives one client with unknown quota, 8 workers,
// against each dialect (30 s for those that say nothing but 429, 12 s for
// the others; THROTTLE_AUTO_DIALECTS=2,3 picks dialects by number), and
// reports the 429s sent before the client's rate first stays within 10% of
// the quota for 2 s, counted from the learned rate sampled every 50 ms.
func TestAutoVendorConverge(t *testing.T) {
	if os.Getenv("THROTTLE_AUTO_TABLE") == "" {
		t.Skip("THROTTLE_AUTO_TABLE=1 runs the real-time convergence runs")
	}
	for _, d := range []dialect{dialectRetryAfter, dialectBare, dialectIETF, dialectOpenAI} {
		if only := os.Getenv("THROTTLE_AUTO_DIALECTS"); only != "" && !strings.Contains(","+only+",", ","+strconv.Itoa(int(d))+",") {
			continue
		}
		// Without headers, slow start is slow on purpose (see Auto): the
		// run lasts long enough to see it end.
		run := 12 * time.Second
		if d == dialectRetryAfter || d == dialectBare {
			run = 30 * time.Second
		}
		v := newVendor(d)
		srv := httptest.NewServer(v)
		learned := must(auto.New())
		base := baseTransport(8)
		c := &http.Client{Transport: must(httpthrottle.NewTransport(base, learned))}
		ctx, cancel := context.WithCancel(context.Background())
		stopAt := time.AfterFunc(run, cancel)
		var wg sync.WaitGroup
		var failed, done atomic.Int64
		v.start = time.Now()
		start := v.start
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/call", nil)
					if err := callOK(c.Do(req)); err != nil {
						if ctx.Err() == nil && failed.Add(1) == 1 {
							t.Logf("%s: first failure at %v: %v", d, time.Since(start), err)
						}
						continue
					}
					done.Add(1)
				}
			}()
		}
		type sample struct {
			at   time.Duration
			rate float64
		}
		var samples []sample
		tick := time.NewTicker(50 * time.Millisecond)
	loop:
		for {
			select {
			case <-ctx.Done():
				break loop
			case <-tick.C:
				for _, q := range learned.Stats() {
					for _, l := range q.Limits {
						samples = append(samples, sample{time.Since(start), float64(l.Rate.Tokens()) / l.Rate.Period().Seconds()})
					}
				}
			}
		}
		tick.Stop()
		stopAt.Stop()
		cancel()
		wg.Wait()
		base.CloseIdleConnections()
		srv.Close()
		var trace []string
		for i := 0; i < len(samples); i += 10 {
			trace = append(trace, fmt.Sprintf("%.0f", samples[i].rate))
		}
		t.Logf("%s: rate every 0.5 s: %s; 429s at %v", d, strings.Join(trace, " "), v.refusedAt)
		// The first instant from which the rate stays within 10% for 2 s.
		conv := time.Duration(-1)
		for i := range samples {
			okFor := true
			for j := i; j < len(samples) && samples[j].at-samples[i].at < 2*time.Second; j++ {
				if math.Abs(samples[j].rate-vendorRate) > 0.1*vendorRate {
					okFor = false
					break
				}
			}
			if okFor && samples[len(samples)-1].at-samples[i].at >= 2*time.Second {
				conv = samples[i].at
				break
			}
		}
		v.mu.Lock()
		before := sort.Search(len(v.refusedAt), func(i int) bool { return conv >= 0 && v.refusedAt[i] > conv })
		if conv < 0 {
			before = len(v.refusedAt)
		}
		total := len(v.refusedAt)
		v.mu.Unlock()
		t.Logf("%s, one client: converged at %v with %d 429s before; %d 429s in %v; %d calls done (%.1f/s), %d failed",
			d, conv, before, total, run, done.Load(), float64(done.Load())/run.Seconds(), failed.Load())
	}
}
