package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

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

// browse starts a headless Chromium (skipping the test when there is none)
// with a window 1100 pixels wide and height high, and loads url in it,
// waiting for the first row of limits; the context ends with the test.
func browse(t *testing.T, url string, height int) context.Context {
	t.Helper()
	path := chromium()
	if path == "" {
		t.Skip("no chromium found (apt-get install -y chromium, or set THROTTLE_CHROMIUM): the page is not tested in a browser")
	}
	actx, cancelA := chromedp.NewExecAllocator(t.Context(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.WindowSize(1100, height), chromedp.NoSandbox)...)
	t.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelT)
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(`tr[data-limit]`)); err != nil {
		t.Fatal(err)
	}
	return ctx
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

// rows reads the rows the page shows, by limiter, "/" and limit.
func rows(t *testing.T, ctx context.Context) map[string]shown {
	t.Helper()
	got := map[string]shown{}
	for _, r := range must(t, ctx, chromedp.Evaluate[[]shown](readRows)) {
		got[r.Limiter+"/"+r.Limit] = r
	}
	return got
}

// tick moves clk a second on and waits for the page to show the data of
// that instant: two redraws, the second asked for after the clock moved.
func tick(t *testing.T, ctx context.Context, clk *clockwork.FakeClock) {
	t.Helper()
	draws := must(t, ctx, chromedp.Evaluate[string](`document.body.dataset.draws`))
	clk.Advance(time.Second)
	wait := fmt.Sprintf("+document.body.dataset.draws >= %s + 2", draws)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](wait, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	if at, want := must(t, ctx, chromedp.Evaluate[string](`document.body.dataset.at`)), clk.Now().Format(time.RFC3339Nano); at != want {
		t.Fatalf("the page's data is of %s, the clock at %s", at, want)
	}
}

// save writes the page's screenshot to out, or to the test's temporary
// directory when out is "".
func save(t *testing.T, ctx context.Context, out, name string) {
	t.Helper()
	png := must(t, ctx, chromedp.FullScreenshot(100))
	if out == "" {
		out = filepath.Join(t.TempDir(), name)
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

// redrawnEverySecond checks that the page's last redraws came at least
// once a second of real time.
func redrawnEverySecond(t *testing.T, ctx context.Context) {
	t.Helper()
	times := must(t, ctx, chromedp.Evaluate[[]float64](`window.drawTimes`))
	gap := 0.0
	for i := 1; i < len(times); i++ {
		gap = max(gap, times[i]-times[i-1])
	}
	if len(times) < 10 || gap >= 1000 {
		t.Errorf("%d redraws, the longest gap %.0fms: want one at least every second", len(times), gap)
	}
	t.Logf("%d redraws, longest gap %.0fms", len(times), gap)
}

// sameAsStatus checks that the page shows each limit of sts, the Status
// of the limiter registered as name, at now: its level, what is left, its
// pause and the pause's cause. It reports whether a pause was shown with
// its cause.
func sameAsStatus(t *testing.T, got map[string]shown, name string, sts []throttle.LimitStatus, now time.Time) (sawPause bool) {
	t.Helper()
	for _, st := range sts {
		r, ok := got[name+"/"+st.Name]
		if !ok || r.Level != st.Level || r.Remaining != st.Remaining || r.Cause != st.Cause || r.PausedNs != max(int64(st.Paused.Sub(now)), 0) {
			t.Errorf("at %v: %s/%s: Status %+v, page %+v", now, name, st.Name, st, r)
		}
		if st.Paused.After(now) && st.Cause != "" && strings.Contains(r.Text, "paused") && strings.Contains(r.Text, st.Cause) {
			sawPause = true
		}
	}
	return sawPause
}

// changedEachStep checks that the chart's points changed at every step.
func changedEachStep(t *testing.T, points []string) {
	t.Helper()
	changed := 0
	for i := 1; i < len(points); i++ {
		if points[i] != points[i-1] {
			changed++
		}
	}
	if changed < len(points)-1 {
		t.Errorf("the chart changed %d times in %d steps of a second", changed, len(points)-1)
	}
}
