package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinary builds the command and runs it as a user would, checking
// stdout, stderr and the exit status.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "throttle")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	llmWait, err := os.ReadFile("testdata/llm_wait.golden")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		stdin   string
		code    int
		stdout  string // exact, when not empty
		inOut   string // a substring of stdout
		errLine string // prefix of the single stderr line
	}{
		{name: "replay", args: []string{"replay", "--capacity", "2", "--rate", "1", "0", "0", "0", "1", "3"}, stdout: "true true false true true\n"},
		{name: "replay stdin", args: []string{"replay", "--capacity", "2", "--rate", "0.5", "-"}, stdin: "0\n0\n1\n1.5\n", stdout: "true true false false\n"},
		{name: "replay empty", args: []string{"replay", "--capacity", "2", "--rate", "1"}, stdout: "\n"},
		{name: "replay negative time", args: []string{"replay", "--capacity", "2", "--rate", "1", "-3"}, code: 2, errLine: `throttle replay: argument 1: time "-3": must not be negative`},
		{name: "replay zero duration", args: []string{"replay", "--capacity", "2", "--rate", "1/0s", "1"}, code: 2, errLine: `throttle replay: --rate "1/0s"`},
		{name: "replay help", args: []string{"replay", "--help"}, inOut: "Usage: throttle replay"},
		{name: "simulate", args: []string{"simulate", "--limit", "requests=5/1s", "--limit", "tokens=3000/1s", "testdata/llm.csv"}, stdout: string(llmWait)},
		{name: "simulate bad trace", args: []string{"simulate", "--limit", "r=1/1s", "-"}, stdin: "1\n0\n", code: 2, errLine: `throttle simulate: trace line 2: time "0": earlier than the previous request`},
		{name: "simulate help", args: []string{"simulate", "-h"}, inOut: "Usage: throttle simulate"},
		{name: "top help", args: []string{"--help"}, inOut: "Commands:"},
		{name: "help demo", args: []string{"help", "demo"}, inOut: "Usage: throttle demo "},
		{name: "version", args: []string{"--version"}, stdout: "throttle " + modVersion(t, bin) + "\n"},
		{name: "no command", args: nil, code: 2},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, errLine: `throttle: unknown command "frobnicate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			cmd.Stdin = strings.NewReader(tt.stdin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.code, stderr.String())
			}
			if tt.stdout != "" && stdout.String() != tt.stdout {
				t.Errorf("stdout = %q, want %q", stdout.String(), tt.stdout)
			}
			if !strings.Contains(stdout.String(), tt.inOut) {
				t.Errorf("stdout %q lacks %q", stdout.String(), tt.inOut)
			}
			if tt.errLine != "" {
				if !strings.HasPrefix(stderr.String(), tt.errLine) || strings.Count(stderr.String(), "\n") != 1 {
					t.Errorf("stderr = %q, want one line starting %q", stderr.String(), tt.errLine)
				}
			}
			if tt.code == 0 && stderr.Len() != 0 {
				t.Errorf("stderr = %q on success", stderr.String())
			}
			if strings.Contains(stderr.String(), "goroutine ") || strings.Contains(stderr.String(), "panic") {
				t.Errorf("stack trace on stderr: %s", stderr.String())
			}
		})
	}
}

// modVersion returns the module version and what follows it in the line
// the binary's --version must print, from "go version -m": the same build
// information, read by the toolchain rather than by the binary.
func modVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	var goVersion, mod, rev, at, dirty string
	for i, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case i == 0 && len(f) == 2:
			goVersion = f[1]
		case len(f) >= 3 && f[0] == "mod":
			mod = f[2]
		case len(f) == 2 && f[0] == "build":
			k, v, _ := strings.Cut(f[1], "=")
			switch k {
			case "vcs.revision":
				rev = v
			case "vcs.time":
				at = v
			case "vcs.modified":
				if v == "true" {
					dirty = ", modified"
				}
			}
		}
	}
	if rev != "" {
		mod += " (" + rev + " " + at + dirty + ")"
	}
	return mod + " " + goVersion
}
