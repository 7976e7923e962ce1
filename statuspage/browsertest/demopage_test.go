package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// waitDraw waits for the page to redraw after its draws-th drawing, and
// returns its count of drawings then.
func waitDraw(t *testing.T, ctx context.Context, draws int) int {
	t.Helper()
	wait := fmt.Sprintf("+document.body.dataset.draws > %d", draws)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](wait, chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	return int(must(t, ctx, chromedp.Evaluate[float64](`+document.body.dataset.draws`)))
}

// demoRow reads the row of the demo's limiter as the page shows it, the
// instant of the data it was drawn from, and its chart's points.
func demoRow(t *testing.T, ctx context.Context) (shown, time.Time, string) {
	t.Helper()
	type row struct {
		Level  float64 `json:"level"`
		At     string  `json:"at"`
		Points string  `json:"points"`
	}
	r := must(t, ctx, chromedp.Evaluate[row](`(() => {
		const d = document.querySelector('[data-limiter="throttled client"]');
		const r = d && d.querySelector('tr[data-limit="requests"]');
		const p = d && d.querySelector("polyline");
		return {level: r ? +r.dataset.level : NaN, at: document.body.dataset.at, points: p ? p.getAttribute("points") : ""};
	})()`))
	at, err := time.Parse(time.RFC3339Nano, r.At)
	if err != nil {
		t.Fatalf("the page's instant %q: %v", r.At, err)
	}
	return shown{Limiter: "throttled client", Limit: "requests", Level: r.Level}, at, r.Points
}

// demoJSON is the demo limiter's level in the page's JSON, and its instant.
type demoJSON struct {
	At    time.Time
	Level float64
}

// pageJSON reads the page's JSON (format=json) and the level of the demo's
// limiter in it.
func pageJSON(t *testing.T, url string) demoJSON {
	t.Helper()
	resp, err := http.Get(url + "?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		At       time.Time `json:"at"`
		Limiters []struct {
			Name   string `json:"name"`
			Limits []struct {
				Name  string
				Level float64
			} `json:"limits"`
		} `json:"limiters"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	for _, l := range v.Limiters {
		for _, lim := range l.Limits {
			if l.Name+"/"+lim.Name == demoLimit {
				return demoJSON{At: v.At, Level: lim.Level}
			}
		}
	}
	t.Fatalf("the page's JSON has no %s: %+v", demoLimit, v)
	return demoJSON{}
}

// redrawnEachSecond checks that the page's last n redraws came once a
// second: the page asks every second, counted from its last ask, and a
// redraw lags its ask by the answer's latency, which varies with the load
// of the machine. So the gaps average at most a second and 50ms, and none
// is longer than a second and 250ms.
func redrawnEachSecond(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	times := must(t, ctx, chromedp.Evaluate[[]float64](`window.drawTimes`))
	if len(times) < n+1 {
		t.Fatalf("%d redraws, want at least %d", len(times), n+1)
	}
	times = times[len(times)-n-1:]
	gap := 0.0
	for i := 1; i < len(times); i++ {
		gap = max(gap, times[i]-times[i-1])
	}
	mean := (times[n] - times[0]) / float64(n)
	if gap > 1250 || mean > 1050 {
		t.Errorf("%d redraws %.0fms apart on average, the longest gap %.0fms: want one every second", n+1, mean, gap)
	}
	t.Logf("%d redraws %.0fms apart on average, the longest gap %.0fms", n+1, mean, gap)
}
