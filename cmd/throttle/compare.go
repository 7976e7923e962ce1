package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/throttlekit/throttle/cmd/throttle/internal/trace"
)

// comparer replays a trace through every algorithm of algorithms(), each
// set to the configured limits, per key and all or nothing as simulate
// does: in wait mode a request is taken at the first instant, at or after
// its arrival and the departure of its key's previous request, at which
// every limit's model admits it; in reject mode it is refused unless they
// all admit it on arrival. Unlike the simulator it keeps every key it has
// seen: its memory grows with the keys of the trace.
type comparer struct {
	limits []limitSpec
	reject bool
	algs   []algorithm
	keys   map[string]*cmpKey
	res    []cmpResult // per algorithm
	chart  *cmpSeries  // nil without --chart
}

// cmpKey is one key's models and windows, per algorithm.
type cmpKey struct {
	models [][]limitModel  // [algorithm][limit]
	free   []time.Duration // [algorithm], wait mode: departure of the previous request
	worst  [][]slidingSum  // [algorithm][limit]: tokens in the trailing period
	reqs   []slidingSum    // [algorithm]: requests in the first limit's trailing period
}

// cmpResult is what one algorithm did.
type cmpResult struct {
	admitted, refused uint64
	waits             hist      // arrival to departure, of admitted requests
	worst             []float64 // per limit: most tokens in any window of its period
}

func newComparer(limits []limitSpec, reject, chart bool) *comparer {
	c := &comparer{limits: limits, reject: reject, algs: algorithms(), keys: make(map[string]*cmpKey)}
	c.res = make([]cmpResult, len(c.algs))
	for i := range c.res {
		c.res[i].worst = make([]float64, len(limits))
	}
	if chart {
		c.chart = newCmpSeries(len(c.algs), chartBins)
	}
	return c
}

// checkCompare refuses limits the comparison cannot model.
func checkCompare(limits []limitSpec) error {
	for _, l := range limits {
		if l.rate.Tokens() == 0 {
			return usagef("--compare: limit %q never refills, so every algorithm admits its burst and no more", l.name)
		}
	}
	return nil
}

func (c *comparer) key(name string) *cmpKey {
	k := c.keys[name]
	if k != nil {
		return k
	}
	k = &cmpKey{
		models: make([][]limitModel, len(c.algs)),
		free:   make([]time.Duration, len(c.algs)),
		worst:  make([][]slidingSum, len(c.algs)),
		reqs:   make([]slidingSum, len(c.algs)),
	}
	for a, alg := range c.algs {
		for _, l := range c.limits {
			k.models[a] = append(k.models[a], alg.make(l))
			k.worst[a] = append(k.worst[a], slidingSum{period: l.rate.Period()})
		}
		k.reqs[a] = slidingSum{period: c.limits[0].rate.Period()}
	}
	c.keys[name] = k
	return k
}

// add decides req, whose cost for each limit is costs, with every
// algorithm.
func (c *comparer) add(req trace.Request, line int, costs []int64) error {
	k := c.key(req.Key)
	if c.chart != nil && c.chart.empty() {
		c.chart.origin = req.Time
	}
	for a := range c.algs {
		ms, r := k.models[a], &c.res[a]
		at := req.Time
		if c.reject {
			// Asked at arrival only: a model asked about a later instant
			// may move its state there.
			ok := true
			for j, m := range ms {
				ok = ok && m.ready(at, costs[j]) == at
			}
			if !ok {
				r.refused++
				continue
			}
		} else {
			var err error
			if at, err = readyAll(ms, max(at, k.free[a]), costs); err != nil {
				return fmt.Errorf("trace line %d: %s: %w", line, c.algs[a].name, err)
			}
			if at == never {
				return usagef("trace line %d: %s: the request would wait forever", line, c.algs[a].name)
			}
		}
		dep := at
		for j, m := range ms {
			dep = max(dep, m.leave(at, costs[j]))
		}
		for j, m := range ms {
			m.take(at, dep, costs[j])
			r.worst[j] = max(r.worst[j], k.worst[a][j].add(dep, float64(costs[j])))
		}
		k.free[a] = dep
		r.admitted++
		r.waits.record(dep - req.Time)
		n := k.reqs[a].add(dep, 1)
		if c.chart != nil {
			c.chart.add(a, dep, n)
		}
	}
	return nil
}

// readyAll returns the first instant at or after t at which every model
// admits its cost: the models only ever admit more as time passes with
// nothing taken, so moving to the latest of their answers until they all
// agree finds it. The models may move their state up to the instants
// asked about, which is right only for a request taken at the answer.
func readyAll(ms []limitModel, t time.Duration, costs []int64) (time.Duration, error) {
	for range 1000 {
		next := t
		for j, m := range ms {
			next = max(next, m.ready(t, costs[j]))
		}
		if next == t || next == never {
			return next, nil
		}
		t = next
	}
	return 0, fmt.Errorf("internal error: the limits' models do not agree on an instant near %v", t)
}

// slidingSum is the sum of the values added in the trailing period, for
// values added in time order.
type slidingSum struct {
	period time.Duration
	q      []timedValue
	first  int
	sum    float64
}

type timedValue struct {
	t time.Duration
	v float64
}

// add adds v at t and returns the sum over (t-period, t].
func (s *slidingSum) add(t time.Duration, v float64) float64 {
	for s.first < len(s.q) && s.q[s.first].t <= t-s.period {
		s.sum -= s.q[s.first].v
		s.first++
	}
	if s.first > len(s.q)/2 {
		s.q = append(s.q[:0], s.q[s.first:]...)
		s.first = 0
	}
	s.q = append(s.q, timedValue{t, v})
	s.sum += v
	return s.sum
}

// writeCompare prints the comparison's table.
func writeCompare(w io.Writer, c *comparer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "compare: the same trace through each algorithm, each set per limit to the limit's rate and burst;")
	var ws, bs []string
	for _, l := range c.limits {
		p := paramsOf(l)
		w := p.bp.plus(u128{lo: p.r / 2}).floorDiv(u128{lo: p.r}) // to the nearest ns
		ws = append(ws, fmt.Sprintf("%s %v", l.name, time.Duration(w)))
		perPeriod := float64(l.capacity) + float64(l.rate.Tokens())
		bs = append(bs, fmt.Sprintf("%s %s in %v", l.name, fmtCount(perPeriod), l.rate.Period()))
	}
	fmt.Fprintf(tw, "windows last burst/rate (%s); a token bucket passes at most burst + rate in any period (%s)\n", strings.Join(ws, ", "), strings.Join(bs, ", "))
	fmt.Fprint(tw, "algorithm\tadmitted")
	if c.reject {
		fmt.Fprint(tw, "\trefused")
	}
	fmt.Fprint(tw, "\twait p50\twait p95\twait max")
	for _, l := range c.limits {
		fmt.Fprintf(tw, "\tmost %s in %v", l.name, l.rate.Period())
	}
	fmt.Fprintln(tw)
	for a, alg := range c.algs {
		r := &c.res[a]
		fmt.Fprintf(tw, "%s\t%d", alg.name, r.admitted)
		if c.reject {
			fmt.Fprintf(tw, "\t%d", r.refused)
		}
		fmt.Fprintf(tw, "\t%s\t%s\t%s", fmtDur(r.waits.percentile(50)), fmtDur(r.waits.percentile(95)), fmtDur(r.waits.max))
		for j := range c.limits {
			fmt.Fprintf(tw, "\t%s", fmtCount(r.worst[j]))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// fmtCount formats a whole count of tokens or requests.
func fmtCount(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
