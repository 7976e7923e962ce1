package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/throttlekit/throttle/cmd/throttle/internal/trace"
)

const simulateSynopsis = `simulate --limit NAME=RATE[,burst=N][,per=request|cost] ... [--mode wait|reject] [--chart FILE.svg] TRACE.csv

Replays a request trace against one or several limits, all or nothing as a
throttle.Limiter spends them, and prints a summary. TRACE.csv ("-" for
stdin) has one request per line: time in decimal seconds (never
decreasing), then optionally a cost (a whole number, default 1) and a key.
Each key gets its own set of limits, as a per-key limiter would. A limit's
burst defaults to its tokens per period; a limit named "requests" costs 1
per request, any other the trace's cost, unless per= says otherwise. A limit
is empty while it holds less than one whole token.

Example:
  throttle simulate --limit requests=500/1m --limit tokens=200000/1m calls.csv`

func runSimulate(e *env, args []string) error {
	fs := newFlagSet("simulate", simulateSynopsis)
	var limits limitsFlag
	var mode, chartPath stringFlag
	mode.value = "wait"
	fs.Var(&limits, "limit", "add the limit `NAME=RATE[,burst=N][,per=request|cost]`, such as tokens=200000/1m; repeat for several")
	fs.Var(&mode, "mode", "`MODE` wait (requests wait their turn, as Acquire does) or reject (those that do not fit at once are rejected, as with TryAcquire)")
	fs.Var(&chartPath, "chart", "write an SVG chart of the levels and throughput to `FILE`")
	var classes classesFlag
	fs.Var(&classes, "class", classUsage)
	pos, err := parseArgs(fs, args, e.stdout)
	if err != nil {
		return err
	}
	if len(classes) > 0 {
		return runClassSimulate(e, limits, classes, mode, pos)
	}
	if len(limits) == 0 {
		return usagef("at least one --limit is required, such as --limit requests=500/1m")
	}
	cfg := simConfig{limits: limits, chart: chartPath.set}
	switch mode.value {
	case "wait":
	case "reject":
		cfg.reject = true
	default:
		return usagef("--mode %q: want wait or reject", mode.value)
	}
	switch len(pos) {
	case 0:
		return usagef("a trace file is required (- for stdin)")
	case 1:
	default:
		return usagef("one trace file only, got %d arguments", len(pos))
	}
	name, in := "stdin", e.stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return usagef("trace: %v", err)
		}
		defer f.Close()
		name, in = pos[0], f
	}
	var chart *os.File
	if chartPath.set {
		// Created before the run, so that a bad path fails at once rather
		// than after a long trace.
		if chart, err = os.Create(chartPath.value); err != nil {
			return usagef("--chart: %v", err)
		}
		defer chart.Close()
	}

	sim, err := simulate(cfg, in)
	if err != nil {
		if chart != nil {
			chart.Close()
			os.Remove(chartPath.value)
		}
		return err
	}
	if err := writeSummary(e.stdout, name, sim); err != nil {
		return err
	}
	if chart != nil {
		if err := writeChart(chart, sim.series, cfg.limits, "Level of each limit: "+name); err != nil {
			return fmt.Errorf("--chart: %w", err)
		}
		if err := chart.Close(); err != nil {
			return fmt.Errorf("--chart: %w", err)
		}
	}
	return nil
}

func newTraceReader(r io.Reader) *trace.Reader { return trace.NewReader(r) }

// simulate streams the trace from r through a simulator.
func simulate(cfg simConfig, r io.Reader) (*simulator, error) {
	sim := newSimulator(cfg)
	tr := newTraceReader(r)
	for {
		req, err := tr.Next()
		if err == io.EOF {
			break
		}
		var te *trace.Error
		if errors.As(err, &te) {
			return nil, usagef("%v", err)
		}
		if err != nil {
			return nil, fmt.Errorf("reading the trace: %w", err)
		}
		if err := sim.add(req, tr.Line()); err != nil {
			return nil, err
		}
	}
	sim.finish()
	return sim, nil
}
