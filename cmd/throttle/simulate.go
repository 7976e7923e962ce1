package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/throttlekit/throttle/cmd/throttle/internal/trace"
)

const simulateSynopsis = `simulate --limit NAME=RATE[,burst=N][,per=request|cost] ... [--mode wait|reject] [--compare] [--chart FILE.png|.svg|.pdf] TRACE.csv

Replays a request trace against one or several limits, all or nothing as a
throttle.Limiter spends them, and prints a summary. TRACE.csv ("-" for
stdin) has one request per line: time in decimal seconds (never
decreasing), then optionally a cost (a whole number, default 1) and a key;
a header line "time,..." and a UTF-8 byte-order mark are skipped. Each key
gets its own set of limits, as a per-key limiter would. A limit's burst
defaults to its tokens per period; a limit named "requests" costs 1 per
request, any other the trace's cost, unless per= says otherwise.

The summary:
  waited       requests granted later than they arrived (wait mode)
  wait pN      the N-th percentile of the waits, arrival to grant, exact
               to 0.2%
  span         first arrival to last grant (wait) or last arrival (reject)
  achieved     requests granted per second of the span
and for each limit:
  rate, burst  as configured; with several keys, per key
  counts       what it counts: each request as 1, or the trace's cost
  spent        tokens taken, over all keys
  per second   spent per second of the span
  % of rate    tokens taken beyond the burst each key started with, per
               second each key was active (its first arrival to its last
               decision), as a share of the rate: 100% when the limit
               bound all along, never more
  bound        wait mode: requests that waited for this limit's tokens (it
               was among the last limits to cover them); reject mode:
               requests refused because this limit did not cover them
  short        wait mode: time requests waited for this limit's tokens,
               summed over keys, and as a share of the span
  empty        reject mode: time the limit held less than one whole token,
               summed over keys, and as a share of the span

With --compare, the trace also goes through other algorithms, each set per
limit to the same rate and burst, and a table compares them. With burst B
and rate R per period P, a token takes T = P/R and a window lasts B*T:
  token bucket (throttle)      the library's Bucket, exact: the summary's
  GCRA                         a theoretical arrival time pushed cost*T on,
                               admitted while within B*T of now
  fixed window                 at most B tokens a window, windows from time 0
  sliding window log           at most B tokens in any trailing window
  sliding window counter       the previous window's count weighted by its
                               share of the trailing window, plus the
                               current window's, at most B
  leaky bucket queue (pacing)  requests leave cost*T apart, never in a
                               burst, from a queue of B tokens
All but the first are reference models in this command, in float64
nanoseconds. Columns: admitted and refused (reject mode); wait p50, p95,
max, arrival to leaving (in reject mode only the queue delays); most NAME
in P, the most tokens of that limit that left in any window of its period,
per key. With --compare every key is kept in memory.

Example:
  throttle simulate --limit requests=5/1s --limit tokens=3000/1s cmd/throttle/testdata/llm.csv`

func runSimulate(e *env, args []string) error {
	fs := newFlagSet("simulate", simulateSynopsis)
	var limits limitsFlag
	var mode, chartPath stringFlag
	var compare bool
	mode.value = "wait"
	fs.Var(&limits, "limit", "add the limit `NAME=RATE[,burst=N][,per=request|cost]`, such as tokens=200000/1m; repeat for several")
	fs.Var(&mode, "mode", "`MODE` wait (requests wait their turn, as Acquire does) or reject (those that do not fit at once are rejected, as with TryAcquire)")
	fs.BoolVar(&compare, "compare", false, "also replay the trace through other algorithms set to the same rates and bursts, and compare them (see above)")
	fs.Var(&chartPath, "chart", "write a chart of the levels and throughput to `FILE`, as PNG, SVG or PDF after its name's extension")
	var classes classesFlag
	fs.Var(&classes, "class", classUsage)
	pos, err := parseArgs(fs, args, e.stdout)
	if err != nil {
		return err
	}
	if len(classes) > 0 {
		if compare || chartPath.set {
			return usagef("--class replays a hierarchy alone: without --compare or --chart")
		}
		return runClassSimulate(e, limits, classes, mode, pos)
	}
	if len(limits) == 0 {
		return usagef("at least one --limit is required, such as --limit requests=500/1m")
	}
	cfg := simConfig{limits: limits, chart: chartPath.set, compare: compare}
	if compare {
		if err := checkCompare(limits); err != nil {
			return err
		}
	}
	switch mode.value {
	case "wait":
	case "reject":
		cfg.reject = true
	default:
		return usagef("--mode %q: want wait or reject", mode.value)
	}
	name, in, closeTrace, err := openTrace(e, pos)
	if err != nil {
		return err
	}
	defer closeTrace()
	var chart *chartFile
	if chartPath.set {
		if chart, err = createChart(chartPath.value); err != nil {
			return err
		}
		defer chart.discard()
	}

	sim, err := simulate(cfg, in)
	if err != nil {
		return err
	}
	if err := writeSummary(e.stdout, name, sim); err != nil {
		return err
	}
	if sim.cmp != nil {
		if err := writeCompare(e.stdout, sim.cmp); err != nil {
			return err
		}
	}
	if chart != nil {
		if err := writeSimulateChart(chart, sim, cfg.limits, name); err != nil {
			return fmt.Errorf("--chart: %w", err)
		}
		chart.report(e.stdout)
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

// openTrace opens the one trace file that pos names, or stdin for "-", and
// returns its name for the summary and a function that closes it.
func openTrace(e *env, pos []string) (name string, in io.Reader, closeTrace func(), err error) {
	switch len(pos) {
	case 0:
		return "", nil, nil, usagef("a trace file is required (- for stdin)")
	case 1:
	default:
		return "", nil, nil, usagef("one trace file only, got %d arguments", len(pos))
	}
	if pos[0] == "-" {
		return "stdin", e.stdin, func() {}, nil
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return "", nil, nil, usagef("trace: %v", err)
	}
	return pos[0], f, func() { f.Close() }, nil
}
