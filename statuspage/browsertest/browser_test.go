package browsertest

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/statuspage"
)

var screenshot = flag.String("screenshot", "", "write the page's screenshot to this file (default: the test's temporary directory)")

// TestPageInChromium runs a load through a Transport on a fake clock
// against a server that refuses every fifth call with a 429 and
// Retry-After, with the page open in Chromium. At each step of the load
// the levels the page shows are the limiter's Status at the instant the
// page's data was read (the clock stands still meanwhile), a paused limit
// shows its pause and its cause, the chart changes, and the page redraws
// at least once a second of real time. It saves a screenshot.
func TestPageInChromium(t *testing.T) {
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

	api := refusingAPI(t)
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

	ctx := browse(t, srv.URL+"/debug/throttle/", 1400)

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
		tick(t, ctx, clk)
		got := rows(t, ctx)
		pts := must(t, ctx, chromedp.Evaluate[string](`document.querySelector('[data-limiter="openai"] polyline').getAttribute("points")`))
		if len(got) != 3 {
			t.Fatalf("step %d: rows %+v", step, got)
		}
		for name, l := range map[string]*throttle.Limiter{"openai": lim, "github": otherLim} {
			if sameAsStatus(t, got, name, l.Status(nil), clk.Now()) {
				sawPause = true
			}
		}
		points = append(points, pts)
	}
	if !sawPause {
		t.Error("no pause was shown with its cause")
	}
	changedEachStep(t, points)
	redrawnEverySecond(t, ctx)
	save(t, ctx, *screenshot, "statuspage.png")
}
