package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/cmd/throttle/internal/trace"
	"github.com/throttlekit/throttle/htb"
)

// classSpec is one --class of simulate: a class of an htb.NewQuota
// hierarchy whose root is the one --limit.
type classSpec struct {
	name, parent string
	rateText     string
	cfg          htb.Config
}

// classesFlag collects repeated --class flags.
type classesFlag []classSpec

func (f *classesFlag) String() string { return "" }

func (f *classesFlag) Set(s string) error {
	c, err := parseClass(s)
	if err != nil {
		return err
	}
	for _, o := range *f {
		if o.name == c.name {
			return fmt.Errorf("class %q given twice", c.name)
		}
	}
	*f = append(*f, c)
	return nil
}

const classUsage = "add the class `NAME=RATE[,burst=N][,ceil=RATE][,ceilburst=N][,parent=NAME]` of the one --limit, which becomes a shared quota; the trace's key names each request's class; repeat for several"

// parseClass parses NAME=RATE[,burst=N][,ceil=RATE][,ceilburst=N][,parent=NAME].
// The burst defaults to the class's share of its parent's (see
// htb.Config), the ceiling to the parent's.
func parseClass(s string) (classSpec, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return classSpec{}, errors.New("want NAME=RATE[,burst=N][,ceil=RATE][,ceilburst=N][,parent=NAME], such as search=100000/1m")
	}
	if strings.ContainsAny(name, " \t,=") {
		return classSpec{}, fmt.Errorf("class name %q must not contain spaces, commas or =", name)
	}
	parts := strings.Split(rest, ",")
	c := classSpec{name: name, rateText: parts[0], cfg: htb.Config{Name: name}}
	rate := func(text string) (throttle.Rate, error) {
		if err := needPeriod(text); err != nil {
			return throttle.Rate{}, err
		}
		r, err := trace.ParseRate(text)
		if err != nil {
			return throttle.Rate{}, fmt.Errorf("rate %q: %w", text, err)
		}
		x, err := exactRate(r)
		if err != nil {
			return throttle.Rate{}, fmt.Errorf("rate %q: %w", text, err)
		}
		return x, nil
	}
	if err := once(parts[1:]); err != nil {
		return c, err
	}
	var err error
	if c.cfg.Rate, err = rate(parts[0]); err != nil {
		return c, err
	}
	for _, opt := range parts[1:] {
		k, v, _ := strings.Cut(opt, "=")
		switch k {
		case "burst":
			if c.cfg.Burst, err = trace.ParseCost(v); err != nil {
				return c, fmt.Errorf("burst %q: %w", v, err)
			}
		case "ceilburst":
			if c.cfg.CeilBurst, err = trace.ParseCost(v); err != nil {
				return c, fmt.Errorf("ceilburst %q: %w", v, err)
			}
		case "ceil":
			if c.cfg.Ceil, err = rate(v); err != nil {
				return c, fmt.Errorf("ceil: %w", err)
			}
		case "parent":
			c.parent = v
		default:
			return c, fmt.Errorf("unknown option %q: want burst=N, ceil=RATE, ceilburst=N or parent=NAME", opt)
		}
	}
	return c, nil
}

// classStats is what one class received.
type classStats struct {
	requests, accepted, rejected uint64
	received                     u128
}

// runClassSimulate replays the trace in pos against the hierarchy of
// limits[0] and classes: each request does TryAcquire on the class its key
// names, at its arrival on a fake clock.
func runClassSimulate(e *env, limits limitsFlag, classes classesFlag, mode stringFlag, pos []string) error {
	if len(limits) != 1 {
		return usagef("--class needs exactly one --limit, the quota the classes share; got %d", len(limits))
	}
	if mode.set && mode.value != "reject" {
		return usagef("--class replays in --mode reject only (TryAcquire at each arrival)")
	}
	q := limits[0]
	clk := clockwork.NewFakeClockAt(epoch)
	root, err := htb.NewQuota(q.capacity, q.rate, throttle.WithClock(clk), throttle.WithName(q.name))
	if err != nil {
		return usagef("--limit %s: %v", q.name, err)
	}
	byName := map[string]*htb.Class{}
	for _, c := range classes {
		parent := root
		if c.parent != "" {
			if parent = byName[c.parent]; parent == nil {
				return usagef("--class %s: parent %q is not a class given before it", c.name, c.parent)
			}
		}
		k, err := parent.NewClass(c.cfg)
		if err != nil {
			return usagef("--class %s: %v", c.name, err)
		}
		byName[c.name] = k
	}

	name, in, closeTrace, err := openTrace(e, pos)
	if err != nil {
		return err
	}
	defer closeTrace()
	stats := make(map[*htb.Class]*classStats)
	for _, k := range byName {
		stats[k] = &classStats{}
	}
	var total u128
	var first, last time.Duration
	n := uint64(0)
	tr := trace.NewReader(in)
	for {
		req, err := tr.Next()
		if err == io.EOF {
			break
		}
		var te *trace.Error
		if errors.As(err, &te) {
			return usagef("%v", err)
		}
		if err != nil {
			return fmt.Errorf("reading the trace: %w", err)
		}
		k := byName[req.Key]
		if k == nil {
			return usagef("trace line %d: key %q names no --class", tr.Line(), req.Key)
		}
		if n == 0 {
			first = req.Time
		}
		n++
		last = req.Time
		clk.Advance(epoch.Add(req.Time).Sub(clk.Now()))
		cost := req.Cost
		if q.perRequest {
			cost = 1
		}
		st := stats[k]
		st.requests++
		ok, err := k.TryAcquire(cost)
		if err != nil && !errors.Is(err, throttle.ErrCostExceedsCapacity) {
			return fmt.Errorf("trace line %d: %w", tr.Line(), err)
		}
		if ok {
			st.accepted++
			st.received.add(uint64(cost))
			for p := k.Parent(); p != nil && p != root; p = p.Parent() {
				stats[p].received.add(uint64(cost))
			}
			total.add(uint64(cost))
		} else {
			st.rejected++
		}
	}
	return writeClassSummary(e.stdout, name, q, classes, byName, stats, total, n, first, last)
}

func writeClassSummary(w io.Writer, name string, q limitSpec, classes classesFlag, byName map[string]*htb.Class, stats map[*htb.Class]*classStats, total u128, n uint64, first, last time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	if n == 0 {
		fmt.Fprintf(tw, "trace\t%s: no requests\n", name)
		return tw.Flush()
	}
	span := last - first
	fmt.Fprintf(tw, "trace\t%s: %d requests, arrivals from %ss to %ss\n", name, n, seconds(first), seconds(last))
	fmt.Fprintf(tw, "mode\treject: each request takes from its class at once or is turned away (Class.TryAcquire)\n")
	fmt.Fprintf(tw, "quota\t%s %s, burst %d: granted %s in all, at most burst + rate x span = %s\n", q.name, q.rateText, q.capacity, total,
		fmtNum(float64(q.capacity)+q.perSecond()*span.Seconds()))
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "class\tguaranteed\tparent\trequests\taccepted\trejected\treceived\t%% of granted\tper second\t%% of guarantee\n")
	for _, c := range classes {
		k := byName[c.name]
		st := stats[k]
		parent := c.parent
		if parent == "" {
			parent = q.name
		}
		perSec, ofRate := "-", "-"
		if span > 0 {
			v := st.received.float() / span.Seconds()
			perSec = fmtNum(v)
			r := k.Rate()
			ofRate = pct(v, float64(r.Tokens())/r.Period().Seconds())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", c.name, c.rateText, parent, st.requests, st.accepted, st.rejected,
			st.received, pct(st.received.float(), total.float()), perSec, ofRate)
	}
	return tw.Flush()
}
