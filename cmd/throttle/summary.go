package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// writeSummary prints what a simulation did.
func writeSummary(w io.Writer, name string, sim *simulator) error {
	st := &sim.stats
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	keys := "1 key"
	if st.multiKey {
		// A distinct count would need memory growing with the keys;
		// idle keys are dropped instead.
		keys = "several keys, each with its own limits"
	}
	span := st.end - st.first
	if st.requests == 0 {
		fmt.Fprintf(tw, "trace\t%s: no requests\n", name)
		return tw.Flush()
	}
	fmt.Fprintf(tw, "trace\t%s: %d requests, %s, arrivals from %ss to %ss\n", name, st.requests, keys, seconds(st.first), seconds(sim.lastArrival))
	if sim.cfg.reject {
		fmt.Fprintf(tw, "mode\treject: a request that does not fit at once is turned away (TryAcquire)\n")
		fmt.Fprintf(tw, "accepted\t%d (%s)\n", st.accepted, pct(float64(st.accepted), float64(st.requests)))
		fmt.Fprintf(tw, "rejected\t%d (%s)\n", st.rejected, pct(float64(st.rejected), float64(st.requests)))
		fmt.Fprintf(tw, "span\t%s, first to last arrival\n", fmtDur(span))
	} else {
		fmt.Fprintf(tw, "mode\twait: each request waits its turn, first come first served (Acquire)\n")
		fmt.Fprintf(tw, "waited\t%d (%s)\n", st.waited, pct(float64(st.waited), float64(st.requests)))
		for _, p := range []uint64{50, 95, 99} {
			fmt.Fprintf(tw, "wait p%d\t%s\n", p, fmtDur(st.waits.percentile(p)))
		}
		fmt.Fprintf(tw, "wait max\t%s\n", fmtDur(st.waits.max))
		fmt.Fprintf(tw, "span\t%s, first arrival to last grant\n", fmtDur(span))
	}
	if span > 0 {
		fmt.Fprintf(tw, "achieved rate\t%s requests/s\n", fmtNum(float64(st.accepted)/span.Seconds()))
	} else {
		fmt.Fprintf(tw, "achieved rate\tn/a: every decision at one instant\n")
	}
	fmt.Fprintln(tw)
	if st.multiKey {
		fmt.Fprintf(tw, "limit\trate per key\tburst\tcounts\tspent\tper second\t%% of one key's rate\tempty, summed over keys\n")
	} else {
		fmt.Fprintf(tw, "limit\trate\tburst\tcounts\tspent\tper second\t%% of rate\tempty\t%% of span\n")
	}
	for i, l := range sim.cfg.limits {
		counts := "cost"
		if l.perRequest {
			counts = "request"
		}
		spent := st.spent[i]
		perSec, ofRate, ofSpan := "-", "-", ""
		if span > 0 {
			v := spent.float() / span.Seconds()
			perSec = fmtNum(v)
			if r := l.perSecond(); r > 0 {
				ofRate = pct(v, r)
			}
		}
		empty := time.Duration(0)
		if st.empty[i].hi == 0 && st.empty[i].lo <= uint64(never) {
			empty = time.Duration(st.empty[i].lo)
		} else {
			empty = never
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s", l.name, l.rateText, l.capacity, counts, spent, perSec, ofRate, fmtDur(empty))
		if !st.multiKey {
			ofSpan = "-"
			if span > 0 {
				ofSpan = pct(float64(empty), float64(span))
			}
			fmt.Fprintf(tw, "\t%s", ofSpan)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func pct(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return strconv.FormatFloat(a/b*100, 'f', 1, 64) + "%"
}

// fmtNum formats a rate with four significant digits, without exponent.
func fmtNum(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// fmtDur rounds d to three significant digits: the summary's percentiles
// are that precise, and more digits would only hide the magnitude.
func fmtDur(d time.Duration) string {
	if d == never {
		return "forever"
	}
	r := time.Duration(1)
	for v := d; v >= 1000; v /= 10 {
		r *= 10
	}
	return d.Round(r).String()
}
