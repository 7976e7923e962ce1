package main

import (
	"encoding/xml"
	"flag"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestSimulateSummaryGolden(t *testing.T) {
	tests := []struct {
		golden string
		args   string
		stdin  string
	}{
		{"llm_wait.golden", "--limit requests=5/1s --limit tokens=3000/1s testdata/llm.csv", ""},
		{"llm_reject.golden", "--mode reject --limit requests=5/1s --limit tokens=3000/1s testdata/llm.csv", ""},
		{"llm_tokens_only.golden", "--limit tokens=90000/1m,burst=2000 testdata/llm.csv", ""},
		{"keys_wait.golden", "--limit requests=2/1s,burst=3 --limit units=3/1s testdata/keys.csv", ""},
		{"keys_reject.golden", "--mode reject --limit requests=2/1s,burst=3 --limit units=3/1s testdata/keys.csv", ""},
		{"stdin_one_instant.golden", "--limit requests=0.5/1s,burst=2 -", "time\n3,1\n3\n3\n"},
		{"empty.golden", "--limit requests=1/1s -", "time,cost,key\n"},
		{"llm_compare_wait.golden", "--compare --limit requests=5/1s --limit tokens=3000/1s testdata/llm.csv", ""},
		{"keys_compare_reject.golden", "--compare --mode reject --limit requests=2/1s,burst=3 --limit units=3/1s testdata/keys.csv", ""},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			stdout, stderr, code := runCmd(t, tt.stdin, append([]string{"simulate"}, strings.Fields(tt.args)...)...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			golden(t, tt.golden, stdout)
		})
	}
}

func TestSimulateErrors(t *testing.T) {
	tests := []struct {
		name, args, stdin, want string
	}{
		{"no limit", "-", "0\n", `at least one --limit is required, such as --limit requests=500/1m`},
		{"no trace", "--limit requests=1/1s", "", `a trace file is required (- for stdin)`},
		{"two traces", "--limit requests=1/1s a b", "", `one trace file only, got 2 arguments`},
		{"missing trace", "--limit requests=1/1s /nonexistent.csv", "", `trace: open /nonexistent.csv: no such file or directory`},
		{"bad mode", "--mode block --limit requests=1/1s -", "", `--mode "block": want wait or reject`},
		{"bad limit", "--limit requests -", "", `--limit "requests": want NAME=RATE[,burst=N][,per=request|cost], such as requests=500/1m`},
		{"zero period", "--limit r=5/0s -", "", `--limit "r=5/0s": rate "5/0s": period must be a positive duration such as 1s, 1m or 1h`},
		{"negative rate", "--limit r=-5/1s -", "", `--limit "r=-5/1s": rate "-5/1s": must not be negative`},
		{"fractional rate without burst", "--limit r=0.5/1s -", "", `--limit "r=0.5/1s": rate "0.5/1s" has no whole number of tokens per period to use as the burst: add burst=N`},
		{"zero rate without burst", "--limit r=0/1s -", "", `--limit "r=0/1s": rate "0/1s" has no whole number of tokens per period to use as the burst: add burst=N`},
		{"bad burst", "--limit r=5/1s,burst=0 -", "", `--limit "r=5/1s,burst=0": burst "0": must be positive`},
		{"bad per", "--limit r=5/1s,per=token -", "", `--limit "r=5/1s,per=token": per="token": want per=request or per=cost`},
		{"unknown option", "--limit r=5/1s,size=3 -", "", `--limit "r=5/1s,size=3": unknown option "size=3": want burst=N or per=request|cost`},
		{"twice", "--limit r=5/1s --limit r=6/1s -", "", `--limit "r=6/1s": limit "r" given twice`},
		{"negative time", "--limit r=5/1s -", "0\n-1\n", `trace line 2: time "-1": must not be negative`},
		{"non-numeric time", "--limit r=5/1s -", "0\nsoon\n", `trace line 2: time "soon": not a decimal number`},
		{"out of order", "--limit r=5/1s -", "time\n0\n2\n1\n", `trace line 4: time "1": earlier than the previous request`},
		{"cost above burst", "--limit requests=5/1s --limit tokens=100/1s -", "0,50\n1,101\n", `trace line 2: cost 101 exceeds the burst 100 of limit "tokens"`},
		{"fractional cost", "--limit r=5/1s -", "0,1.5\n", `trace line 1: cost "1.5": not a whole number`},
		{"too many fields", "--limit r=5/1s -", "0,1,k,x\n", `trace line 1: 4 fields, want at most 3 (time, cost, key)`},
		{"never refills", "--limit r=0/1s,burst=1 -", "0\n1\n", `trace line 2: the request would wait forever: limit "r": throttle: cost exceeds capacity: the limit never refills and holds less than the cost`},
		{"bad chart path", "--limit r=5/1s --chart /nonexistent/dir/c.svg -", "0\n", `--chart: open /nonexistent/dir/c.svg: no such file or directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCmd(t, tt.stdin, append([]string{"simulate"}, strings.Fields(tt.args)...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			if want := "throttle simulate: " + tt.want + "\n"; stderr != want {
				t.Errorf("stderr = %q\n           want %q", stderr, want)
			}
		})
	}
}

// TestSimulateRejectsNeverRefillingLimitQuietly: in reject mode a limit
// that never refills just rejects once it is spent.
func TestSimulateZeroRateReject(t *testing.T) {
	stdout, stderr, code := runCmd(t, "0\n0\n1\n2\n", "simulate", "--mode", "reject", "--limit", "r=0/1s,burst=2", "-")
	if code != 0 || !strings.Contains(stdout, "accepted       2 (50.0%)") {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}

// svgShape is what the golden file records of a chart: its texts in
// order, and for each drawing style the number of points of every path.
func svgShape(t *testing.T, r io.Reader) (texts []string, paths map[string][]int) {
	t.Helper()
	paths = make(map[string][]int)
	dec := xml.NewDecoder(r)
	inText := false
	cmd := regexp.MustCompile(`[MLA]`)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "text":
				inText = true
				texts = append(texts, "")
			case "path":
				var d, style string
				for _, a := range el.Attr {
					switch a.Name.Local {
					case "d":
						d = a.Value
					case "style":
						style = a.Value
					}
				}
				paths[style] = append(paths[style], len(cmd.FindAllString(d, -1)))
			}
		case xml.EndElement:
			if el.Name.Local == "text" {
				inText = false
			}
		case xml.CharData:
			if inText {
				texts[len(texts)-1] += string(el)
			}
		}
	}
	return texts, paths
}

func TestChartGolden(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "chart.svg")
	stdout, stderr, code := runCmd(t, "", "simulate", "--mode", "reject", "--limit", "requests=5/1s", "--limit", "tokens=3000/1s", "--chart", svg, "testdata/llm.csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasSuffix(stdout, "\nchart: "+svg+" (SVG)\n") {
		t.Errorf("stdout does not say where the chart went:\n%s", stdout)
	}
	f, err := os.Open(svg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	texts, paths := svgShape(t, f)

	// The series the chart must show, computed again from the simulation.
	in, err := os.Open("testdata/llm.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	limits := benchLimitsFrom(t, "requests=5/1s", "tokens=3000/1s")
	sim, err := simulate(simConfig{limits: limits, reject: true, chart: true}, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Level of each limit: testdata/llm.csv", "Tokens spent in each window of the limit's period", "requests, per 1s window", "tokens, per 1s window", "requests 5/1s", "tokens 3000/1s",
		"accepted (55)", "rejected (5)", "configured rate", "time (s)", "level (% of burst)", "tokens a window, % of rate",
		// Time ticks at round values, every 5 s.
		"5", "10", "15", "20"} {
		if !contains(texts, want) {
			t.Errorf("chart has no text %q; texts: %q", want, texts)
		}
	}
	// Each limit's level line and throughput line, in its colour: one path
	// each with as many points as the series, plus a two-point legend
	// sample; the level line thinner.
	for i, l := range limits {
		var levelOK, rateOK bool
		for s, counts := range paths {
			if strings.HasSuffix(s, ";stroke-width:0.75") && containsInt(counts, len(sim.series.levels(i))) {
				levelOK = true
				rateOK = containsInt(paths[strings.TrimSuffix(s, ";stroke-width:0.75")], len(sim.series.throughput(i, l)))
			}
		}
		if !levelOK || !rateOK {
			t.Errorf("limit %s: level line (%d points) drawn %v, throughput line (%d points) in its colour %v; paths: %v",
				l.name, len(sim.series.levels(i)), levelOK, len(sim.series.throughput(i, l)), rateOK, paths)
		}
	}
	// Marks: one glyph per mark, plus one in the legend.
	acc, rej := len(sim.series.marks(true)), len(sim.series.marks(false))
	if rej == 0 || acc == 0 {
		t.Fatalf("the test trace should produce both marks, got %d accepted, %d rejected", acc, rej)
	}
	if got := len(paths[fmt.Sprintf("fill:%s", hexColor(acceptColor))]); got != acc+1 {
		t.Errorf("%d accepted glyphs, want %d marks + 1 in the legend", got, acc)
	}
	// A cross is drawn as two strokes, thick, to be found among many
	// acceptances.
	if got := len(paths[fmt.Sprintf("fill:none;stroke:%s;stroke-width:1.5", hexColor(rejectColor))]); got != 2*(rej+1) {
		t.Errorf("%d rejected strokes, want two for each of %d marks + 1 in the legend", got, rej)
	}
	var shape strings.Builder
	fmt.Fprintf(&shape, "texts: %q\n", texts)
	fmt.Fprintf(&shape, "accepted marks %d, rejected marks %d\n", len(sim.series.marks(true)), len(sim.series.marks(false)))
	styles := make([]string, 0, len(paths))
	for s := range paths {
		styles = append(styles, s)
	}
	slices.Sort(styles)
	for _, s := range styles {
		fmt.Fprintf(&shape, "%s: %v\n", s, paths[s])
	}
	golden(t, "chart_shape.golden", shape.String())
}

func contains(ss []string, s string) bool { return slices.Contains(ss, s) }

// chartTexts runs args, which write an SVG chart to the file named last
// before the trace, and returns the chart's texts.
func chartTexts(t *testing.T, stdin string, args ...string) []string {
	t.Helper()
	svg := filepath.Join(t.TempDir(), "c.svg")
	args = append(args[:len(args)-1:len(args)-1], "--chart", svg, args[len(args)-1])
	_, stderr, code := runCmd(t, stdin, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := os.Open(svg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	texts, _ := svgShape(t, f)
	return texts
}

// TestChartLegendAndWaits: a legend names only what is drawn (no
// "rejected" entry when nothing was rejected), and a wait-mode chart
// shows the waits, with how many there were and the longest.
func TestChartLegendAndWaits(t *testing.T) {
	wait := chartTexts(t, "", "simulate", "--mode", "wait", "--limit", "requests=5/1s", "--limit", "tokens=3000/1s", "testdata/llm.csv")
	for _, x := range wait {
		if strings.HasPrefix(x, "rejected") {
			t.Errorf("wait mode rejects nothing, but the legend has %q", x)
		}
	}
	for _, want := range []string{"accepted (60)", "Waits: 17 requests waited, the longest 906ms (longest of each time bin, at its grant)", "wait (ms)", "longest wait of the bin"} {
		if !contains(wait, want) {
			t.Errorf("wait-mode chart has no text %q; texts %q", want, wait)
		}
	}
	reject := chartTexts(t, "", "simulate", "--mode", "reject", "--limit", "requests=5/1s", "testdata/llm.csv")
	for _, x := range reject {
		if strings.HasPrefix(x, "Waits:") {
			t.Errorf("a reject-mode chart has a waits panel: %q", x)
		}
	}
}

// TestRoundTicks: time ticks fall on round values, whatever the span.
func TestRoundTicks(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		stdin string
		ticks []string
	}{
		{[]string{"simulate", "--mode", "reject", "--limit", "requests=5/1s", "-"}, "0\n0.2\n0.4\n0.6\n0.8\n1.3\n", []string{"0.0", "0.5", "1.0", "1.5", "2.0"}},
		{[]string{"simulate", "--mode", "reject", "--limit", "requests=5/1m", "-"}, "0\n100\n250\n400\n", []string{"0", "100", "200", "300", "400"}},
	} {
		texts := chartTexts(t, tt.stdin, tt.args...)
		for _, want := range tt.ticks {
			if !contains(texts, want) {
				t.Errorf("%s: no tick %q; texts %q", tt.stdin, want, texts)
			}
		}
		for _, x := range texts {
			if strings.HasSuffix(x, ".50") || strings.HasSuffix(x, ".25") {
				t.Errorf("%s: a tick at %q", tt.stdin, x)
			}
		}
	}
}

func containsInt(xs []int, x int) bool { return slices.Contains(xs, x) }

func hexColor(c color.RGBA) string { return fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B) }
