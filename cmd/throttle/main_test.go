package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain builds, in a build without charts, the build with charts once,
// for every test that draws one (TestChartBuild builds its own, as the
// command does).
func TestMain(m *testing.M) {
	dir := ""
	if !chartsBuiltIn {
		var err error
		if dir, err = os.MkdirTemp("", "throttle-test"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		bin := filepath.Join(dir, "throttle")
		if out, err := exec.Command("go", "build", "-tags", "chart", "-o", bin, chartPackage).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building throttle with charts: %v\n%s", err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
		os.Setenv("THROTTLE_CHART_COMMAND", bin)
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// runCmd runs the command line in-process.
func runCmd(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), code
}
