package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDemo runs a small demo in real time (about half a second): the plain
// client gets 429s for most of its requests, the throttled one succeeds
// with every request, in no less than the time the quota needs.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs in real time")
	}
	svg := filepath.Join(t.TempDir(), "demo.svg")
	start := time.Now()
	stdout, stderr, code := runCmd(t, "", "demo", "--requests", "30", "--quota", "50/1s", "--burst", "5", "--chart", svg)
	elapsed := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	row := func(name string) (plain, thr string) {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s+(\S+)\s+(\S+)$`).FindStringSubmatch(stdout)
		if m == nil {
			t.Fatalf("no row %q in:\n%s", name, stdout)
		}
		return m[1], m[2]
	}
	num := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%q is not a number", s)
		}
		return n
	}
	if p, th := row("requests"); p != "30" || th != "30" {
		t.Errorf("requests %s, %s", p, th)
	}
	p, th := row("succeeded")
	if num(th) != 30 {
		t.Errorf("throttled client: %s of 30 succeeded\n%s", th, stdout)
	}
	// The vendor admits its burst of 5 and what refills while the 30
	// requests arrive: far fewer than 30.
	if num(p) < 5 || num(p) > 15 {
		t.Errorf("plain client: %s of 30 succeeded\n%s", p, stdout)
	}
	plainOK := num(p)
	if p, th := row("429s returned to the caller"); num(p) != 30-plainOK || th != "0" {
		t.Errorf("429s returned: %s, %s\n%s", p, th, stdout)
	}
	// The throttled client may send at most its burst (4) at once, then
	// one every 20 ms: 26 × 20 ms.
	_, total := row("total time")
	d, err := time.ParseDuration(total)
	if err != nil {
		t.Fatal(err)
	}
	if d < 520*time.Millisecond || d > elapsed {
		t.Errorf("throttled total time %v, want at least 520ms and at most the %v the run took", d, elapsed)
	}
	// Every call past the burst waited its turn, and every wait names the
	// limit that bound it (issue 41).
	_, waited := row("calls that waited their turn")
	if _, explained := row("waits explained (limit named)"); num(waited) < 26-4 || explained != waited {
		t.Errorf("%s calls waited, %s explained; want at least 22, all explained\n%s", waited, explained, stdout)
	}
	// Progress: plain lines (stdout is no terminal), ending with the whole
	// run of each client.
	if want := fmt.Sprintf("plain client: 30/30 done, %d 429s returned to the caller\n", 30-plainOK); !strings.Contains(stdout, want) {
		t.Errorf("no progress line %q in:\n%s", want, stdout)
	}
	if !regexp.MustCompile(`(?m)^throttled client: 30/30 done, 0 429s returned to the caller, \d+ received and retried$`).MatchString(stdout) {
		t.Errorf("no final progress line for the throttled client in:\n%s", stdout)
	}
	if strings.Contains(stdout, "\r") {
		t.Errorf("carriage return in output that is no terminal:\n%q", stdout)
	}
	if !strings.HasSuffix(stdout, "\nchart: "+svg+" (SVG)\n") {
		t.Errorf("stdout does not say where the chart went:\n%s", stdout)
	}
	if !strings.Contains(stdout, "throttled (50/1s, burst 4)") {
		t.Errorf("header does not show the client's limit:\n%s", stdout)
	}
	f, err := os.Open(svg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	texts, _ := svgShape(t, f)
	if !contains(texts, "Throttled client (50/1s, burst 4) against the fake vendor") || !contains(texts, "configured rate") {
		t.Errorf("chart texts %q", texts)
	}
	// The comparison the demo prints: each client's successes and 429s.
	if !contains(texts, "Answers over time: the plain client against the throttled one") || !contains(texts, "throttled client: successes (30)") || !contains(texts, "throttled client: 429s (0)") {
		t.Errorf("the chart does not compare the clients; texts %q", texts)
	}
	plain := false
	for _, x := range texts {
		plain = plain || strings.HasPrefix(x, "plain client: 429s (")
	}
	if !plain {
		t.Errorf("no plain client's 429s in the chart; texts %q", texts)
	}
}

func TestDemoErrors(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"--requests 0", "--requests 0: want 1 to 100000"},
		{"--burst 0", "--burst 0: must be positive"},
		{"--quota 5/0s", `--quota "5/0s": rate "5/0s": period must be a positive duration such as 1s, 1m or 1h`},
		{"--quota 0/1s", `--quota "0/1s": a quota that never refills would leave the demo waiting forever`},
		{"extra", `unexpected argument "extra"`},
		{"--quota 1/1h", "--quota 1/1h with --requests 300: the throttled client would take about 12 days (after its burst of 9, the other 291 go at 1/1h), and the demo runs at most 10 minutes: give a faster --quota or fewer --requests"},
		{"--quota 1/1s --requests 700", "--quota 1/1s with --requests 700: the throttled client would take about 12 minutes (after its burst of 9, the other 691 go at 1/1s), and the demo runs at most 10 minutes: give a faster --quota or fewer --requests"},
	} {
		stdout, stderr, code := runCmd(t, "", append([]string{"demo"}, strings.Fields(tt.args)...)...)
		if code != 2 || stdout != "" || stderr != "throttle demo: "+tt.want+"\n" {
			t.Errorf("demo %s: exit %d, stdout %q, stderr %q", tt.args, code, stdout, stderr)
		}
	}
}

// TestProgressTerminal: on a terminal the line is rewritten in place, and
// the final one ends it.
func TestProgressTerminal(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b, tty: true, name: "plain client", total: 3}
	p.answered(true)
	p.print(false)
	p.answered(false)
	p.print(true)
	want := "\r\033[Kplain client: 1/3 done, 1 429s returned to the caller" +
		"\r\033[Kplain client: 2/3 done, 1 429s returned to the caller\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// TestDemoStatusPage runs a small demo with --status and reads the page
// while the demo runs, from the writer the demo prints its address to: the
// throttled client's limiter is on it once the throttled run begins.
func TestDemoStatusPage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs in real time")
	}
	w := &statusReader{t: t}
	var errOut bytes.Buffer
	code := run(context.Background(), []string{"demo", "--requests", "20", "--quota", "100/1s", "--burst", "5", "--status", "127.0.0.1:0"}, strings.NewReader(""), w, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if w.url == "" {
		t.Fatalf("no status page address in:\n%s", w.out.String())
	}
	if !strings.Contains(w.page, `"name":"throttled client"`) || !strings.Contains(w.page, `"Name":"requests"`) {
		t.Fatalf("the page during the run: %s", w.page)
	}
}

// statusReader is the demo's stdout: it notes the page's address, and
// reads the page when the throttled client's run begins.
type statusReader struct {
	t         *testing.T
	out       bytes.Buffer
	url, page string
}

func (s *statusReader) Write(p []byte) (int, error) {
	s.out.Write(p)
	line := string(p)
	if _, after, ok := strings.Cut(line, "status page at "); ok {
		s.url = strings.TrimSpace(after)
	}
	if s.url != "" && s.page == "" && strings.Contains(line, "throttled client") {
		resp, err := http.Get(s.url + "?format=json")
		if err != nil {
			s.t.Errorf("reading the page: %v", err)
			return len(p), nil
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s.page = string(b)
	}
	return len(p), nil
}
