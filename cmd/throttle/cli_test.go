package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestHelpCommand: "throttle help CMD" prints CMD's help, exactly what
// "throttle CMD --help" prints.
func TestHelpCommand(t *testing.T) {
	for _, c := range commands() {
		got, stderr, code := runCmd(t, "", "help", c.name)
		want, _, _ := runCmd(t, "", c.name, "--help")
		if code != 0 || stderr != "" || got != want || !strings.HasPrefix(got, "Usage: throttle "+c.name+" ") {
			t.Errorf("help %s: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", c.name, code, stderr, got, want)
		}
	}
	top, _, code := runCmd(t, "", "help")
	if code != 0 || !strings.Contains(top, "Commands:") {
		t.Errorf("help: exit %d, stdout %q", code, top)
	}
	_, stderr, code := runCmd(t, "", "help", "frobnicate")
	if code != 2 || stderr != "throttle: unknown command \"frobnicate\"; run \"throttle --help\"\n" {
		t.Errorf("help frobnicate: exit %d, stderr %q", code, stderr)
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"--version", "-version", "version"} {
		out, stderr, code := runCmd(t, "", arg)
		if code != 0 || stderr != "" || !strings.HasPrefix(out, "throttle ") || !strings.HasSuffix(out, " "+runtime.Version()+"\n") || strings.Count(out, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q, stdout %q", arg, code, stderr, out)
		}
	}
}

// TestSimulateBOM: a trace saved by a spreadsheet, with a byte-order mark
// before its header, gives the same summary as without.
func TestSimulateBOM(t *testing.T) {
	const trace = "time,cost\n0,1\n0.5,2\n"
	want, _, _ := runCmd(t, trace, "simulate", "--limit", "r=2/1s", "-")
	got, stderr, code := runCmd(t, "\ufeff"+trace, "simulate", "--limit", "r=2/1s", "-")
	if code != 0 || stderr != "" || got != want {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, got, want)
	}
	got, stderr, code = runCmd(t, "\ufeff0\n0.5\n", "replay", "--capacity", "1", "--rate", "1", "-")
	if code != 0 || stderr != "" || got != "true false\n" {
		t.Errorf("replay: exit %d, stderr %q, stdout %q", code, stderr, got)
	}
}

// TestSimulateOneRequest: one request is "1 request", and a limit's % of
// rate, beyond its burst, has no span to speak of.
func TestSimulateOneRequest(t *testing.T) {
	out, stderr, code := runCmd(t, "2.5\n", "simulate", "--limit", "requests=1/1s", "-")
	if code != 0 || stderr != "" || !strings.Contains(out, "stdin: 1 request, 1 key, arrivals from 2.5s to 2.5s\n") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, stderr, out)
	}
}

// TestChartFormats: --chart writes the format its name asks for, says
// where it went, and refuses a name it cannot honour before running.
func TestChartFormats(t *testing.T) {
	dir := t.TempDir()
	check := map[string]func([]byte) error{
		"c.png": func(b []byte) error {
			cfg, err := png.DecodeConfig(bytes.NewReader(b))
			if err == nil && (cfg.Width != 1417 || cfg.Height != 1181) {
				err = fmt.Errorf("%d×%d pixels, want 1417×1181", cfg.Width, cfg.Height)
			}
			return err
		},
		"c.PDF": func(b []byte) error {
			if !bytes.HasPrefix(b, []byte("%PDF-")) {
				return errors.New("no %PDF- header")
			}
			return nil
		},
		"c.svg": func(b []byte) error {
			if !bytes.Contains(b[:min(len(b), 200)], []byte("<svg")) {
				return errors.New("no <svg element")
			}
			return xml.NewDecoder(bytes.NewReader(b)).Decode(new(struct{}))
		},
	}
	for name, ok := range check {
		path := filepath.Join(dir, name)
		trace := "testdata/llm.csv"
		if name == "c.svg" {
			trace = "testdata/keys.csv" // a line per key
		}
		for _, cmd := range [][]string{
			{"simulate", "--limit", "requests=5/1s", "--chart", path, trace},
		} {
			stdout, stderr, code := runCmd(t, "", cmd...)
			format := strings.ToUpper(filepath.Ext(name)[1:])
			if code != 0 || stderr != "" || !strings.HasSuffix(stdout, "\nchart: "+path+" ("+format+")\n") {
				t.Fatalf("%s: exit %d, stderr %q, stdout:\n%s", name, code, stderr, stdout)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := ok(b); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	for _, name := range []string{"c.jpg", "chart", "c.svg.txt"} {
		path := filepath.Join(dir, name)
		for _, cmd := range [][]string{
			{"simulate", "--limit", "r=5/1s", "--chart", path, "testdata/llm.csv"},
			{"demo", "--chart", path},
		} {
			stdout, stderr, code := runCmd(t, "", cmd...)
			want := fmt.Sprintf("throttle %s: --chart %q: the name must end in .png, .svg or .pdf, the format to write\n", cmd[0], path)
			if code != 2 || stdout != "" || stderr != want {
				t.Errorf("%s: exit %d, stdout %q, stderr %q", cmd, code, stdout, stderr)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: %s was created (%v)", cmd, path, err)
			}
		}
	}
}

// TestSimulateHelpDefinesColumns: every column of every table simulate
// prints is defined in its --help.
func TestSimulateHelpDefinesColumns(t *testing.T) {
	help, _, _ := runCmd(t, "", "simulate", "--help")
	// The term --help defines each column by.
	term := map[string]string{
		"limit": "for each limit:", "rate": "rate, burst", "rate per key": "with several keys, per key", "burst": "rate, burst",
		"counts": "\n  counts ", "spent": "\n  spent ", "per second": "\n  per second ", "% of rate": "\n  % of rate ",
		"bound": "\n  bound ", "short": "\n  short ", "empty": "\n  empty ", "% of span": "as a share of the span",
		"algorithm": "\n  token bucket (throttle) ", "admitted": "admitted and refused", "refused": "admitted and refused",
		"wait p50": "wait p50, p95", "wait p95": "wait p50, p95", "wait max": "p95,\nmax",
	}
	for _, args := range [][]string{
		{"--limit", "requests=5/1s", "--limit", "tokens=3000/1s", "--compare", "testdata/llm.csv"},
		{"--mode", "reject", "--limit", "requests=5/1s", "--compare", "testdata/llm.csv"},
		{"--limit", "requests=2/1s,burst=3", "testdata/keys.csv"},
		{"--mode", "reject", "--limit", "requests=2/1s,burst=3", "testdata/keys.csv"},
	} {
		out, stderr, code := runCmd(t, "", append([]string{"simulate"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, %s", args, code, stderr)
		}
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, "limit ") && !strings.HasPrefix(line, "algorithm ") {
				continue
			}
			for _, col := range regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1) {
				col = strings.TrimSuffix(col, ", summed over keys")
				if strings.HasPrefix(col, "most ") {
					col = "most"
					term[col] = "\nin P, the most tokens"
				}
				want, ok := term[col]
				if !ok {
					t.Errorf("column %q has no definition known to the test", col)
					continue
				}
				if !strings.Contains(help, want) {
					t.Errorf("column %q: --help lacks %q", col, want)
				}
			}
		}
	}
}

// TestChartBuild: a build without charts asked for one builds the build
// with charts itself and runs the command there, exit status included.
func TestChartBuild(t *testing.T) {
	if chartsBuiltIn {
		t.Skip("this build draws charts itself")
	}
	t.Setenv("THROTTLE_CHART_COMMAND", "")
	path := filepath.Join(t.TempDir(), "c.svg")
	stdout, stderr, code := runCmd(t, "0\n0\n", "simulate", "--limit", "requests=1/1s", "--chart", path, "-")
	if code != 0 || stderr != "" || !strings.HasSuffix(stdout, "\nchart: "+path+" (SVG)\n") {
		t.Fatalf("exit %d, stderr %q, stdout %q", code, stderr, stdout)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Fatalf("no SVG written: %v", err)
	}
	// A usage error keeps its exit status through the second build.
	_, stderr, code = runCmd(t, "", "simulate", "--limit", "requests=1", "--chart", path, "-")
	if code != 2 || !strings.Contains(stderr, "has no period") {
		t.Fatalf("exit %d, stderr %q; want 2 and the usage error", code, stderr)
	}
	if wantsChart([]string{"--limit", "r=1/1s", "--", "--chart"}) || !wantsChart([]string{"-chart=x.svg"}) {
		t.Error("wantsChart misreads the flags")
	}
}
