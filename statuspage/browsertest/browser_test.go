package browsertest

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/statuspage"
)

var screenshot = flag.String("screenshot", "", "write the page's screenshot to this file (default: the test's temporary directory)")

// chromium returns the path of a Chromium or Chrome, or "" if none: the
// environment's THROTTLE_CHROMIUM, else the usual names on PATH.
func chromium() string {
	if p := os.Getenv("THROTTLE_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// shown is one limit's row as the page shows it.
type shown struct {
	Limiter   string  `json:"limiter"`
	Limit     string  `json:"limit"`
	Level     float64 `json:"level"`
	Remaining int64   `json:"remaining"`
	PausedNs  int64   `json:"pausedNs"`
	Cause     string  `json:"cause"`
	Text      string  `json:"text"`
}

const readRows = `[...document.querySelectorAll("tr[data-limit]")].map(r => ({
	limiter: r.closest("[data-limiter]").dataset.limiter, limit: r.dataset.limit, level: +r.dataset.level, remaining: +r.dataset.remaining,
	pausedNs: +r.dataset.pausedNs, cause: r.dataset.cause, text: r.innerText}))`

// TestPageInChromium runs a load through a Transport on a fake clock
// against a server that refuses every fifth call with a 429 and
// Retry-After, with the page open in Chromium. At each step of the load
// the levels the page shows are the limiter's Status at the instant the
// page's data was read (the clock stands still meanwhile), a paused limit
// shows its pause and its cause, the chart changes, and the page redraws
// at least once a second of real time. It saves a screenshot.
func TestPageInChromium(t *testing.T) {
	path := chromium()
	if path == "" {
		t.Skip("no chromium found (apt-get install -y chromium, or set THROTTLE_CHROMIUM): the page is not tested in a browser")
	}
	clk := clockwork.NewFakeClockAt(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	page, err := statuspage.New(statuspage.WithClock(clk), statuspage.WithRefresh(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer page.Close()
	obs := page.Observer("openai")
	req, _ := throttle.New(5, throttle.Per(5, time.Second), throttle.WithClock(clk), throttle.WithName("requests"), throttle.WithObserver(obs))
	tok, _ := throttle.New(4000, throttle.Per(2000, time.Second), throttle.WithClock(clk), throttle.WithName("tokens"), throttle.WithObserver(obs))
	lim, _ := throttle.NewLimiter(req, tok)
	page.Register("openai", lim)
	other, _ := throttle.New(100, throttle.Per(50, time.Second), throttle.WithClock(clk), throttle.WithName("requests"))
	otherLim, _ := throttle.NewLimiter(other)
	page.Register("github", otherLim)

	var calls atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%5 == 0 {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer api.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr, err := httpthrottle.NewTransport(base, httpthrottle.Shared(lim), httpthrottle.WithRetries(0),
		httpthrottle.WithCost(func(*http.Request, throttle.Gate) ([]int64, error) { return []int64{1, 700}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/throttle/", page)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	actx, cancelA := chromedp.NewExecAllocator(t.Context(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.WindowSize(1100, 1400), chromedp.NoSandbox)...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelT()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/debug/throttle/"), chromedp.WaitVisible(`tr[data-limit]`)); err != nil {
		t.Fatal(err)
	}

	draws := 0
	var points []string
	sawPause := false
	for step := range 12 {
		// The load of one step: three calls, each with a deadline that
		// fails it fast rather than wait on the fake clock.
		for range 3 {
			cctx, cc := clockwork.WithTimeout(t.Context(), clk, 10*time.Millisecond)
			r, _ := http.NewRequestWithContext(cctx, http.MethodPost, api.URL+"/v1/chat/completions", nil)
			if resp, err := tr.RoundTrip(r); err == nil {
				resp.Body.Close()
			}
			cc()
		}
		otherLim.TryAcquire(int64(10 + step*5))
		draws, _ = strconv.Atoi(must(t, ctx, chromedp.Evaluate[string](`document.body.dataset.draws`)))
		clk.Advance(time.Second)
		// Two redraws: the second asked for its data after the clock moved.
		draws += 2
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf("+document.body.dataset.draws >= %d", draws), chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		rows := must(t, ctx, chromedp.Evaluate[[]shown](readRows))
		at := must(t, ctx, chromedp.Evaluate[string](`document.body.dataset.at`))
		pts := must(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-limiter="openai"] polyline').getAttribute("points")`))
		if want := clk.Now().Format(time.RFC3339Nano); at != want {
			t.Fatalf("step %d: the page's data is of %s, the clock at %s", step, at, want)
		}
		got := map[string]shown{}
		for _, r := range rows {
			got[r.Limiter+"/"+r.Limit] = r
		}
		if len(rows) != 3 {
			t.Fatalf("step %d: rows %+v", step, rows)
		}
		for name, l := range map[string]*throttle.Limiter{"openai": lim, "github": otherLim} {
			for _, st := range l.Status(nil) {
				r, ok := got[name+"/"+st.Name]
				if !ok || r.Level != st.Level || r.Remaining != st.Remaining || r.Cause != st.Cause || r.PausedNs != max(int64(st.Paused.Sub(clk.Now())), 0) {
					t.Errorf("step %d: %s/%s: Status %+v, page %+v", step, name, st.Name, st, r)
				}
				if !st.Paused.IsZero() && st.Cause != "" && strings.Contains(r.Text, "paused") && strings.Contains(r.Text, st.Cause) {
					sawPause = true
				}
			}
		}
		points = append(points, pts)
	}
	if !sawPause {
		t.Error("no pause was shown with its cause")
	}
	changed := 0
	for i := 1; i < len(points); i++ {
		if points[i] != points[i-1] {
			changed++
		}
	}
	if changed < len(points)-1 {
		t.Errorf("the chart changed %d times in %d steps of a second", changed, len(points)-1)
	}
	times := must(t, ctx, chromedp.Evaluate[[]float64](`window.drawTimes`))
	gap := 0.0
	for i := 1; i < len(times); i++ {
		gap = max(gap, times[i]-times[i-1])
	}
	if len(times) < 10 || gap >= 1000 {
		t.Errorf("%d redraws, the longest gap %.0fms: want one at least every second", len(times), gap)
	}
	t.Logf("%d redraws, longest gap %.0fms", len(times), gap)

	png := must(t, ctx, chromedp.FullScreenshot(100))
	out := *screenshot
	if out == "" {
		out = filepath.Join(t.TempDir(), "statuspage.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", out, len(png))
}

// must runs a in the browser and returns its value, failing the test on an
// error.
func must[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
