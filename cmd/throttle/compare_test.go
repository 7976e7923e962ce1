package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCompare replays tr with --compare and returns the simulator.
func runCompare(t *testing.T, reject bool, tr string, limits ...string) *simulator {
	t.Helper()
	sim := newSimulator(simConfig{limits: benchLimitsFrom(t, limits...), reject: reject, compare: true})
	if err := runTrace(sim, tr); err != nil {
		t.Fatal(err)
	}
	return sim
}

func resultOf(t *testing.T, c *comparer, name string) *cmpResult {
	t.Helper()
	for a, alg := range c.algs {
		if alg.name == name {
			return &c.res[a]
		}
	}
	t.Fatalf("no algorithm %q", name)
	return nil
}

// TestCompareBoundary pins the classic case against fixed windows: a limit
// of 100 a minute, 100 requests at 0:59.9 and 100 at 1:00.1. The fixed
// window admits all 200 within 0.2 s, since a window ends between them;
// our bucket of capacity 100 admits its 100 and what refilled in 0.2 s,
// 100/60 a second: a third of a token, so none.
func TestCompareBoundary(t *testing.T) {
	var b strings.Builder
	for range 100 {
		b.WriteString("59.9\n")
	}
	for range 100 {
		b.WriteString("60.1\n")
	}
	sim := runCompare(t, true, b.String(), "requests=100/1m")
	refilled := int64(200*time.Millisecond) * 100 / int64(time.Minute) // whole tokens
	for _, tt := range []struct {
		name     string
		admitted uint64
		worst    float64
	}{
		{"fixed window", 200, 200},
		{"token bucket (throttle)", 100 + uint64(refilled), 100 + float64(refilled)},
		{"GCRA", 100, 100},
		{"sliding window log", 100, 100},
		{"sliding window counter", 100, 100},
		{"leaky bucket queue (pacing)", 100, 100},
	} {
		r := resultOf(t, sim.cmp, tt.name)
		if r.admitted != tt.admitted || r.refused != 200-tt.admitted || r.worst[0] != tt.worst {
			t.Errorf("%s: admitted %d, refused %d, most in a minute %v; want %d, %d, %v", tt.name, r.admitted, r.refused, r.worst[0], tt.admitted, 200-tt.admitted, tt.worst)
		}
	}
	// The simulator itself, the same bucket, agrees.
	if sim.stats.accepted != 100 {
		t.Errorf("simulator accepted %d, want 100", sim.stats.accepted)
	}
	// The queue admits as many, but sends them 0.6 s apart: the last
	// leaves 99 intervals after the first.
	if r := resultOf(t, sim.cmp, "leaky bucket queue (pacing)"); r.waits.max != 99*600*time.Millisecond {
		t.Errorf("queue's longest wait %v, want 59.4s", r.waits.max)
	}
}

// TestCompareProperties replays random traces and checks what each
// algorithm promises: the token bucket row is the simulator's; GCRA, the
// token bucket in other terms, decides the same where a token takes whole
// nanoseconds; the sliding log never passes more than the burst in a
// window, the fixed window never more than twice; the queue never sends
// two requests closer than a token's time.
func TestCompareProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		reject := trial%2 == 0
		burst := 1 + r.IntN(10)
		tokens := 1 + r.IntN(10)
		perToken := time.Duration(1+r.IntN(1000)) * time.Millisecond
		limit := fmt.Sprintf("requests=%d/%dns,burst=%d", tokens, int64(perToken)*int64(tokens), burst)
		interval := perToken / time.Duration(1+r.IntN(3))
		tr := randomTrace(r, 1+r.IntN(300), interval, 1, 1+r.IntN(3))
		sim := runCompare(t, reject, tr, limit)
		c := sim.cmp
		tb := resultOf(t, c, "token bucket (throttle)")
		if tb.admitted != sim.stats.accepted || tb.refused != sim.stats.rejected {
			t.Fatalf("trial %d (%s, reject %v): compare's token bucket admitted %d, refused %d; simulator %d, %d",
				trial, limit, reject, tb.admitted, tb.refused, sim.stats.accepted, sim.stats.rejected)
		}
		if !reject {
			for _, p := range []uint64{50, 95, 100} {
				if got, want := tb.waits.percentile(p), sim.stats.waits.percentile(p); got != want {
					t.Fatalf("trial %d: wait p%d %v, simulator %v", trial, p, got, want)
				}
			}
		}
		g := resultOf(t, c, "GCRA")
		if g.admitted != tb.admitted || g.waits.max != tb.waits.max || g.waits.percentile(50) != tb.waits.percentile(50) || g.worst[0] != tb.worst[0] {
			t.Fatalf("trial %d (%s, reject %v): GCRA admitted %d (wait max %v, worst %v), token bucket %d (%v, %v)\ntrace:\n%s",
				trial, limit, reject, g.admitted, g.waits.max, g.worst[0], tb.admitted, tb.waits.max, tb.worst[0], tr)
		}
		period := time.Duration(tokens) * perToken
		if w := time.Duration(burst) * perToken; w == period {
			// The window is the period the worst count is taken over.
			if l := resultOf(t, c, "sliding window log"); l.worst[0] > float64(burst) {
				t.Fatalf("trial %d (%s): sliding log passed %v in a window", trial, limit, l.worst[0])
			}
			if f := resultOf(t, c, "fixed window"); f.worst[0] > 2*float64(burst) {
				t.Fatalf("trial %d (%s): fixed window passed %v in a window", trial, limit, f.worst[0])
			}
		}
		// Departures at least perToken apart: at most ceil(period/perToken)
		// = tokens in any period, per key.
		if q := resultOf(t, c, "leaky bucket queue (pacing)"); q.worst[0] > float64(tokens) {
			t.Fatalf("trial %d (%s): the queue sent %v in a period", trial, limit, q.worst[0])
		}
		for a := range c.algs {
			if c.res[a].admitted+c.res[a].refused != sim.stats.requests {
				t.Fatalf("trial %d: %s decided %d of %d requests", trial, c.algs[a].name, c.res[a].admitted+c.res[a].refused, sim.stats.requests)
			}
		}
	}
}

func TestCompareErrors(t *testing.T) {
	stdout, stderr, code := runCmd(t, "0\n", "simulate", "--compare", "--limit", "r=0/1s,burst=1", "-")
	if code != 2 || stdout != "" || stderr != "throttle simulate: --compare: limit \"r\" never refills, so every algorithm admits its burst and no more\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestCompareChart: with --chart, a third panel draws a line per
// algorithm, and the fixed window's reaches twice the limit.
func TestCompareChart(t *testing.T) {
	var b strings.Builder
	for range 100 {
		b.WriteString("59.9\n")
	}
	for range 100 {
		b.WriteString("60.1\n")
	}
	svg := filepath.Join(t.TempDir(), "c.svg")
	_, stderr, code := runCmd(t, b.String(), "simulate", "--mode", "reject", "--compare", "--limit", "requests=100/1m", "--chart", svg, "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := os.Open(svg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	texts, _ := svgShape(t, f)
	for _, want := range []string{"Requests admitted in the trailing 1m0s, by algorithm", "(highest of each time bin, of any key)", "requests in 1m0s"} {
		if !contains(texts, want) {
			t.Errorf("chart has no text %q; texts: %q", want, texts)
		}
	}
	// A legend entry per algorithm; one whose line lies on an earlier
	// one's says so, as the token bucket's and GCRA's always do.
	for _, alg := range algorithms() {
		found := false
		for _, x := range texts {
			found = found || x == alg.name || strings.HasPrefix(x, alg.name+" (identical to ")
		}
		if !found {
			t.Errorf("no legend entry for %s", alg.name)
		}
	}
	if !contains(texts, "GCRA (identical to token bucket (throttle))") {
		t.Errorf("GCRA's line, identical to the token bucket's, is not said to be; texts %q", texts)
	}
	// Round time ticks, and whole requests on the count axis.
	for _, want := range []string{"60", "80", "100", "0", "50", "150", "200"} {
		if !contains(texts, want) {
			t.Errorf("no tick %q; texts %q", want, texts)
		}
	}
	sim := newSimulator(simConfig{limits: benchLimitsFrom(t, "requests=100/1m"), reject: true, compare: true, chart: true})
	if err := runTrace(sim, b.String()); err != nil {
		t.Fatal(err)
	}
	for a, alg := range sim.cmp.algs {
		top := 0.0
		for _, p := range sim.cmp.chart.line(a) {
			top = max(top, p.y)
		}
		if want := sim.cmp.res[a].worst[0]; top != want {
			t.Errorf("%s: line peaks at %v, want its most in a minute, %v", alg.name, top, want)
		}
	}
}
