//go:build !chart

package main

import "errors"

// chartsBuiltIn says this build draws charts itself: not without the tag
// chart (see chart_exec.go).
const chartsBuiltIn = false

// The drawing itself is in chart.go, built with the tag chart; run never
// calls these in a build without it, as it runs a build with charts first.
var errNoCharts = errors.New("internal error: this build of throttle draws no charts")

func writeSimulateChart(*chartFile, *simulator, []limitSpec, string) error { return errNoCharts }

func writeDemoChart(*chartFile, *series, limitSpec, string, *demoAnswers, *demoAnswers) error {
	return errNoCharts
}
