package main

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/statuspage"
	"github.com/throttlekit/throttle/throttletest"
)

const demoSynopsis = `demo [--requests N] [--quota RATE] [--burst N] [--chart FILE.png|.svg|.pdf] [--status ADDR]

Starts a fake API vendor on a loopback port with a request quota per API
key, sends the same requests through a plain http.Client and through one
whose transport is throttled to the quota, all at once from one goroutine
each, and prints the two side by side. No network, nothing to install.
The throttled client keeps one token of the burst in reserve, against the
jitter of the network between its clock and the vendor's. With --status,
the throttled client's limiter is shown live at
http://ADDR/debug/throttle/ while the demo runs (statuspage).`

// demoResult is what one client saw.
type demoResult struct {
	requests, ok, tooMany, failed int64
	retries, throttled            int64 // seen by the throttled transport
	waited, explained             int64 // calls that waited their turn, and of them those whose wait named its limit
	total, maxLatency             time.Duration
}

func runDemo(e *env, args []string) error {
	fs := newFlagSet("demo", demoSynopsis)
	n := fs.Int("requests", 300, "how many requests each client sends")
	quota := stringFlag{value: "20/1s"}
	fs.Var(&quota, "quota", "the vendor's request quota per API key, as a `RATE` such as 20/1s")
	burst := fs.Int64("burst", 10, "the vendor's burst: requests it admits at once")
	var chartPath stringFlag
	fs.Var(&chartPath, "chart", "write a chart of the throttled client's run to `FILE`, as PNG, SVG or PDF after its name's extension")
	var statusAddr stringFlag
	fs.Var(&statusAddr, "status", "serve the live status page of the throttled client's limiter on `ADDR` (such as localhost:8080) while the demo runs")
	pos, err := parseArgs(fs, args, e.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *n < 1 || *n > 100_000 {
		return usagef("--requests %d: want 1 to 100000", *n)
	}
	if *burst < 1 {
		return usagef("--burst %d: must be positive", *burst)
	}
	vendor, err := parseLimit(fmt.Sprintf("requests=%s,burst=%d", quota.value, *burst))
	if err != nil {
		return usagef("--quota %q: %v", quota.value, err)
	}
	if vendor.rate.Tokens() == 0 {
		return usagef("--quota %q: a quota that never refills would leave the demo waiting forever", quota.value)
	}
	client := vendor
	// One under the vendor's burst, 9 against 10 by default: arrivals jitter past the sends by a fraction of a request (docs/buckets.md).
	client.capacity = max(1, vendor.capacity-1)
	client.rateText = vendor.rateText
	if d := demoDuration(client, int64(*n)); d > maxDemo {
		return usagef("--quota %s with --requests %d: the throttled client would take about %s (after its burst of %d, the other %d go at %s), and the demo runs at most %s: give a faster --quota or fewer --requests",
			quota.value, *n, fmtLong(d), client.capacity, int64(*n)-client.capacity, quota.value, fmtLong(maxDemo))
	}
	var chart *chartFile
	if chartPath.set {
		if chart, err = createChart(chartPath.value); err != nil {
			return err
		}
		defer chart.discard()
	}

	srv := throttletest.NewServer(throttletest.Config{Requests: vendor.rate, RequestBurst: vendor.capacity})
	defer srv.Close()
	fmt.Fprintf(e.stdout, "fake vendor at %s: %s requests per API key, burst %d\n", srv.URL, vendor.rateText, vendor.capacity)
	fmt.Fprintf(e.stdout, "sending %d requests at once through each client...\n", *n)

	var bopts []throttle.Option
	var page *statuspage.Page
	if statusAddr.set {
		var stop func()
		if page, stop, err = serveStatus(e, statusAddr.value); err != nil {
			return err
		}
		defer stop()
		bopts = append(bopts, throttle.WithObserver(page.Observer(demoLimiter)))
	}
	plainBase := demoTransport()
	defer plainBase.CloseIdleConnections()
	prog := startProgress(e.stdout, "plain client", *n, nil)
	var plainRec *demoRecorder
	if chart != nil {
		plainRec = &demoRecorder{}
	}
	plain, err := fire(e.ctx, &http.Client{Transport: plainBase}, srv.URL, "plain-client", *n, plainRec, prog)
	if err != nil {
		return err
	}

	waits := &demoWaits{limit: "requests"}
	bopts = append(bopts, throttle.WithObserver(waits))
	b, err := throttle.New(client.capacity, client.rate, append(bopts, throttle.WithName("requests"))...)
	if err != nil {
		return err
	}
	lim, err := throttle.NewLimiter(b)
	if err != nil {
		return err
	}
	if page != nil {
		page.Register(demoLimiter, lim)
	}
	base := demoTransport()
	defer base.CloseIdleConnections()
	tr, err := httpthrottle.NewTransport(base, httpthrottle.Shared(lim))
	if err != nil {
		return err
	}
	var rec *demoRecorder
	if chart != nil {
		rec = &demoRecorder{s: newSeries(1, chartBins, []time.Duration{client.rate.Period()}), b: b, capacity: float64(client.capacity)}
	}
	prog = startProgress(e.stdout, "throttled client", *n, func() int64 { return tr.Stats().Throttled })
	throttled, err := fire(e.ctx, &http.Client{Transport: tr}, srv.URL, "throttled-client", *n, rec, prog)
	if err != nil {
		return err
	}
	st := tr.Stats()
	throttled.retries, throttled.throttled = st.Retried, st.Throttled
	throttled.waited, throttled.explained = waits.counts()

	fmt.Fprintln(e.stdout)
	writeDemoTable(e.stdout, plain, throttled, client)
	if chart != nil {
		title := fmt.Sprintf("Throttled client (%s, burst %d) against the fake vendor", client.rateText, client.capacity)
		if err := writeDemoChart(chart, rec.s, client, title, &plainRec.answers, &rec.answers); err != nil {
			return fmt.Errorf("--chart: %w", err)
		}
		chart.report(e.stdout)
	}
	return nil
}

// maxDemo bounds how long the throttled client's run may take.
const maxDemo = 10 * time.Minute

// demoDuration is how long the throttled client needs for n requests: the
// burst at once, the rest at the rate.
func demoDuration(client limitSpec, n int64) time.Duration {
	rest := n - client.capacity
	if rest <= 0 {
		return 0
	}
	r := client.rate
	d := new(big.Int).Mul(big.NewInt(rest), big.NewInt(int64(r.Period())))
	d.Quo(d, big.NewInt(r.Tokens()))
	if !d.IsInt64() {
		return never
	}
	return time.Duration(d.Int64())
}

// fmtLong says a long duration in the largest unit that reads well.
func fmtLong(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.0f days", d.Hours()/24)
	case d >= 2*time.Hour:
		return fmt.Sprintf("%.0f hours", d.Hours())
	}
	return fmt.Sprintf("%.0f minutes", d.Minutes())
}

// demoTransport is a loopback transport that keeps a connection per
// concurrent request, so connection setup does not pace the run.
func demoTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		MaxIdleConnsPerHost: 1000,
		IdleConnTimeout:     10 * time.Second,
	}
}

// demoRecorder adds each response of the throttled run to the chart's
// series: the client limiter's level when it came back, and whether it was
// a success or a 429.
type demoRecorder struct {
	mu       sync.Mutex
	s        *series // nil for the plain client, which has no limiter
	b        *throttle.Bucket
	capacity float64
	start    time.Time
	answers  demoAnswers
}

// demoAnswers is one client's answers in the order they came: the
// instant of each, from the run's start, and whether it was a success.
type demoAnswers struct {
	at []time.Duration
	ok []bool
}

func (r *demoRecorder) record(ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := time.Since(r.start)
	r.answers.at = append(r.answers.at, t)
	r.answers.ok = append(r.answers.ok, ok)
	if r.s != nil {
		lv := []float64{r.b.Status().Level / r.capacity * 100}
		r.s.add(t, ok, 0, lv, lv, []int64{1})
	}
}

// cumulative returns the running count of successes (ok) or of 429s.
func (a *demoAnswers) cumulative(ok bool) []point {
	out := []point{{0, 0}}
	n := 0
	for i, t := range a.at {
		if a.ok[i] == ok {
			n++
			out = append(out, point{secs(t), float64(n)})
		}
	}
	return out
}

// fire sends n GET requests at once, one goroutine each, with apiKey as the
// bearer token, and waits for them all.
func fire(ctx context.Context, c *http.Client, url, apiKey string, n int, rec *demoRecorder, prog *progress) (demoResult, error) {
	var (
		mu  sync.Mutex
		res = demoResult{requests: int64(n)}
		wg  sync.WaitGroup
		err error
	)
	start := time.Now()
	if rec != nil {
		rec.start = start
	}
	for i := range n {
		wg.Go(func() {
			req, e := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/v1/items/%d", url, i), nil)
			if e != nil {
				panic(e) // the URL is ours
			}
			req.Header.Set("Authorization", "Bearer "+apiKey)
			t0 := time.Now()
			resp, e := c.Do(req)
			if e == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			lat := time.Since(t0)
			if rec != nil && e == nil {
				rec.record(resp.StatusCode/100 == 2)
			}
			prog.answered(e == nil && resp.StatusCode == http.StatusTooManyRequests)
			mu.Lock()
			defer mu.Unlock()
			res.maxLatency = max(res.maxLatency, lat)
			switch {
			case e != nil:
				res.failed++
				if err == nil && ctx.Err() != nil {
					err = ctx.Err()
				}
			case resp.StatusCode/100 == 2:
				res.ok++
			case resp.StatusCode == http.StatusTooManyRequests:
				res.tooMany++
			default:
				res.failed++
			}
		})
	}
	wg.Wait()
	res.total = time.Since(start)
	prog.finish()
	return res, err
}

func writeDemoTable(w io.Writer, plain, thr demoResult, client limitSpec) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintf(tw, "\tplain http.Client\tthrottled (%s, burst %d)\n", client.rateText, client.capacity)
	fmt.Fprintf(tw, "requests\t%d\t%d\n", plain.requests, thr.requests)
	fmt.Fprintf(tw, "succeeded\t%d\t%d\n", plain.ok, thr.ok)
	fmt.Fprintf(tw, "429s received\t%d\t%d\n", plain.tooMany, thr.throttled)
	fmt.Fprintf(tw, "429s returned to the caller\t%d\t%d\n", plain.tooMany, thr.tooMany)
	fmt.Fprintf(tw, "other failures\t%d\t%d\n", plain.failed, thr.failed)
	fmt.Fprintf(tw, "retries\t%d\t%d\n", 0, thr.retries)
	fmt.Fprintf(tw, "calls that waited their turn\t%d\t%d\n", 0, thr.waited)
	fmt.Fprintf(tw, "waits explained (limit named)\t%d\t%d\n", 0, thr.explained)
	fmt.Fprintf(tw, "total time\t%s\t%s\n", fmtDur(plain.total), fmtDur(thr.total))
	fmt.Fprintf(tw, "max wait (call to response)\t%s\t%s\n", fmtDur(plain.maxLatency), fmtDur(thr.maxLatency))
	tw.Flush()
}
