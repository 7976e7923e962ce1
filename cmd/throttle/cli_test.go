package main

import (
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
