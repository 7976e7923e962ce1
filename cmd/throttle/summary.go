package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// writeSummary prints what a simulation did. simulateSynopsis defines
// each line and column; keep the two in step.
func writeSummary(w io.Writer, name string, sim *simulator) error {
	st := &sim.stats
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	nkeys := st.keys.len()
	multiKey := nkeys > 1
	keys := "1 key"
	if multiKey {
		keys = fmt.Sprintf("%d keys, each with its own limits", nkeys)
	}
	span := st.end - st.first
	if st.requests == 0 {
		fmt.Fprintf(tw, "trace\t%s: no requests\n", name)
		return tw.Flush()
	}
	fmt.Fprintf(tw, "trace\t%s: %s, %s, arrivals from %ss to %ss\n", name, plural(st.requests, "request"), keys, seconds(st.first), seconds(sim.lastArrival))
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
	rate, last, ofSpan := "rate", "empty", "\t% of span"
	if !sim.cfg.reject {
		last = "short"
	}
	if multiKey {
		rate, last, ofSpan = "rate per key", last+", summed over keys", ""
	}
	fmt.Fprintf(tw, "limit\t%s\tburst\tcounts\tspent\tper second\t%% of rate\tbound\t%s%s\n", rate, last, ofSpan)
	active := st.keys.active().float()
	for i, l := range sim.cfg.limits {
		counts := "cost"
		if l.perRequest {
			counts = "request"
		}
		spent := st.spent[i]
		perSec, ofRate := "-", "-"
		if span > 0 {
			perSec = fmtNum(spent.float() / span.Seconds())
		}
		if r := l.perSecond(); r > 0 && active > 0 {
			// Beyond the burst each key started with, over the time each
			// was active: at most 100%, since a key takes at most its burst
			// and what refills over its span.
			beyond := max(0, spent.float()-float64(l.capacity)*float64(nkeys))
			ofRate = pct(beyond, r*active/float64(time.Second))
		}
		d := st.empty[i]
		if !sim.cfg.reject {
			d = st.short[i]
		}
		dur := never
		if d.hi == 0 && d.lo <= uint64(never) {
			dur = time.Duration(d.lo)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s", l.name, l.rateText, l.capacity, counts, spent, perSec, ofRate, st.bound[i], fmtDur(dur))
		if !multiKey {
			p := "-"
			if span > 0 {
				p = pct(float64(dur), float64(span))
			}
			fmt.Fprintf(tw, "\t%s", p)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// plural returns "1 request" or "n requests".
func plural(n uint64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
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
