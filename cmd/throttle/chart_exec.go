package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// A build without the tag chart draws no charts and needs none of
// gonum/plot's modules (plotting, fonts, PDF): "go run ./cmd/throttle
// demo" downloads and compiles none of them. A command given --chart then
// runs again, whole, from a build with the tag, which the go command makes
// once and then takes from its build cache.

// chartPackage is the command's import path.
const chartPackage = "github.com/throttlekit/throttle/cmd/throttle"

// wantsChart reports whether the flags in args ask for a chart.
func wantsChart(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if strings.HasPrefix(a, "-") && name == "chart" {
			return true
		}
	}
	return false
}

// runChartBuild runs the command line args in a build of this command with
// charts, and returns its exit status: the command THROTTLE_CHART_COMMAND
// names if set, else one it builds. In a checkout (a build without a
// module version) it builds the package as the workspace has it; an
// installed command builds its own version.
func runChartBuild(e *env, args []string) int {
	if bin := os.Getenv("THROTTLE_CHART_COMMAND"); bin != "" {
		return runChartCommand(e, bin, args)
	}
	dir, err := os.MkdirTemp("", "throttle-chart")
	if err != nil {
		fmt.Fprintf(e.stderr, "throttle: --chart: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "throttle")
	var build *exec.Cmd
	if v := moduleVersion(); v == "" {
		build = exec.CommandContext(e.ctx, "go", "build", "-tags", "chart", "-o", bin, chartPackage)
	} else {
		build = exec.CommandContext(e.ctx, "go", "install", "-tags", "chart", chartPackage+"@"+v)
		build.Env = append(os.Environ(), "GOBIN="+dir)
	}
	if isTerminal(e.stderr) {
		fmt.Fprintln(e.stderr, "throttle: charts are drawn by a build of throttle with gonum/plot; building it (once: then it is cached)...")
	}
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(e.stderr, "throttle: --chart needs a build of throttle with charts, and %s failed: %v\n%s", strings.Join(build.Args, " "), err, out)
		fmt.Fprintf(e.stderr, "throttle: or install one: go install -tags chart %s@latest\n", chartPackage)
		return 1
	}
	return runChartCommand(e, bin, args)
}

// runChartCommand runs args with bin, a build of throttle with charts.
func runChartCommand(e *env, bin string, args []string) int {
	cmd := exec.CommandContext(e.ctx, bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() >= 0 {
			return ee.ExitCode()
		}
		fmt.Fprintf(e.stderr, "throttle: --chart: %v\n", err)
		return 1
	}
	return 0
}

// moduleVersion is the version of the module this command was built from,
// "" in a checkout.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Path != "github.com/throttlekit/throttle/cmd/throttle" || bi.Main.Version == "(devel)" {
		return ""
	}
	return bi.Main.Version
}
