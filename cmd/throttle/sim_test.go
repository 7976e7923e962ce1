package main

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// model is an independent reference for one key: each limit's level as an
// exact rational, refilled continuously and capped, the rules of the token
// bucket written out directly with math/big.
type model struct {
	limits     []limitSpec
	reject     bool
	lv         []*big.Rat
	last       int64 // ns the levels are computed for
	free       int64 // wait mode: grant of the previous request
	lastTake   int64
	emptyUntil []int64
	empty      []int64
	bound      []uint64
	short      []int64
}

func newModel(limits []limitSpec, reject bool) *model {
	m := &model{limits: limits, reject: reject, emptyUntil: make([]int64, len(limits)), empty: make([]int64, len(limits)),
		bound: make([]uint64, len(limits)), short: make([]int64, len(limits))}
	for _, l := range limits {
		m.lv = append(m.lv, new(big.Rat).SetInt64(l.capacity))
	}
	return m
}

func (m *model) rate(i int) *big.Rat {
	r := m.limits[i].rate
	return big.NewRat(r.Tokens(), int64(r.Period()))
}

func (m *model) advance(t int64) {
	if t <= m.last {
		return
	}
	for i := range m.lv {
		add := new(big.Rat).Mul(m.rate(i), new(big.Rat).SetInt64(t-m.last))
		m.lv[i].Add(m.lv[i], add)
		if c := new(big.Rat).SetInt64(m.limits[i].capacity); m.lv[i].Cmp(c) > 0 {
			m.lv[i] = c
		}
	}
	m.last = t
}

// until returns the whole nanoseconds, rounded up, until limit i holds
// need tokens, or -1 for never.
func (m *model) until(i int, need int64) int64 {
	gap := new(big.Rat).Sub(new(big.Rat).SetInt64(need), m.lv[i])
	if gap.Sign() <= 0 {
		return 0
	}
	r := m.rate(i)
	if r.Sign() == 0 {
		return -1
	}
	q := new(big.Rat).Quo(gap, r)
	n, rem := new(big.Int).QuoRem(q.Num(), q.Denom(), new(big.Int))
	if rem.Sign() != 0 {
		n.Add(n, big.NewInt(1))
	}
	return n.Int64()
}

func (m *model) costs(cost int64) []int64 {
	out := make([]int64, len(m.limits))
	for i, l := range m.limits {
		out[i] = cost
		if l.perRequest {
			out[i] = 1
		}
	}
	return out
}

// decide returns the instant of the decision and whether it was granted.
func (m *model) decide(arrival, cost int64) (int64, bool) {
	cs := m.costs(cost)
	t := arrival
	if !m.reject {
		t = max(arrival, m.free)
		m.advance(t)
		g := t
		for i := range m.limits {
			g = max(g, t+m.until(i, cs[i]))
		}
		for i := range m.limits {
			if u := m.until(i, cs[i]); u > 0 {
				m.short[i] += u
				if t+u == g {
					m.bound[i]++
				}
			}
		}
		t = g
	}
	m.advance(t)
	refused := false
	for i := range m.limits {
		if m.lv[i].Cmp(new(big.Rat).SetInt64(cs[i])) < 0 {
			m.bound[i]++
			refused = true
		}
	}
	if refused {
		return t, false
	}
	for i := range m.limits {
		m.lv[i].Sub(m.lv[i], new(big.Rat).SetInt64(cs[i]))
		m.empty[i] += min(m.emptyUntil[i], t) - m.lastTake
		if u := m.until(i, 1); u < 0 {
			m.emptyUntil[i] = int64(never)
		} else {
			m.emptyUntil[i] = t + u
		}
	}
	m.lastTake = t
	m.free = t
	return t, true
}

func (m *model) finish(end int64) {
	for i := range m.limits {
		m.empty[i] += min(m.emptyUntil[i], end) - m.lastTake
	}
}

// randomLimits returns 1 to 3 limits with small capacities and rates, so
// that traces exercise every state, and the largest cost that fits.
func randomLimits(r *rand.Rand, allowZeroRate bool) ([]limitSpec, int64) {
	n := 1 + r.IntN(3)
	var ls limitsFlag
	maxCost := int64(1 << 62)
	for i := range n {
		tokens := 1 + r.IntN(30)
		if allowZeroRate && r.IntN(8) == 0 {
			tokens = 0
		}
		period := time.Duration(1+r.IntN(5000)) * time.Millisecond / time.Duration(1+r.IntN(7))
		burst := 1 + r.IntN(20)
		per := "cost"
		if r.IntN(3) == 0 {
			per = "request"
		}
		spec := fmt.Sprintf("l%d=%d/%dns,burst=%d,per=%s", i, tokens, period, burst, per)
		if err := ls.Set(spec); err != nil {
			panic(err)
		}
		if per == "cost" {
			maxCost = min(maxCost, int64(burst))
		}
	}
	return ls, min(maxCost, 20)
}

// randomTrace returns a CSV trace whose gaps cluster around interval.
func randomTrace(r *rand.Rand, n int, interval time.Duration, maxCost int64, keys int) string {
	var b strings.Builder
	var t int64
	for range n {
		switch r.IntN(4) {
		case 0: // same instant
		case 1:
			t += int64(interval) + int64(r.IntN(5)) - 2
		default:
			t += r.Int64N(2 * int64(interval))
		}
		fmt.Fprintf(&b, "%d.%09d,%d", t/1e9, t%1e9, 1+r.Int64N(maxCost))
		if keys > 0 {
			fmt.Fprintf(&b, ",k%d", r.IntN(keys))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestSimulateMatchesModel checks every decision of simulate, in both
// modes, and the time each limit spent empty, against the exact model.
func TestSimulateMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		reject := trial%2 == 1
		limits, maxCost := randomLimits(r, reject)
		interval := limits[0].rate.Period() / time.Duration(max(1, limits[0].rate.Tokens()))
		tr := randomTrace(r, 1+r.IntN(200), max(interval, 1), maxCost, 0)

		sim := newSimulator(simConfig{limits: limits, reject: reject})
		m := newModel(limits, reject)
		lines := strings.Split(strings.TrimSpace(tr), "\n")
		n := 0
		sim.decided = func(arrival, at time.Duration, ok bool) {
			var cost int64
			fmt.Sscanf(strings.Split(lines[n], ",")[1], "%d", &cost)
			wantAt, wantOK := m.decide(int64(arrival), cost)
			if int64(at) != wantAt || ok != wantOK {
				t.Fatalf("trial %d (reject %v), request %d (%s) with %v: decided at %d, %v; model %d, %v\ntrace:\n%s",
					trial, reject, n, lines[n], limits, at, ok, wantAt, wantOK, tr)
			}
			n++
		}
		if err := runTrace(sim, tr); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if n != len(lines) {
			t.Fatalf("trial %d: %d decisions for %d requests", trial, n, len(lines))
		}
		m.finish(int64(sim.stats.end))
		for i := range limits {
			if got := sim.stats.empty[i]; got.hi != 0 || int64(got.lo) != m.empty[i] {
				t.Fatalf("trial %d: limit %d empty %v, model %d\ntrace:\n%s", trial, i, got, m.empty[i], tr)
			}
			if got := sim.stats.short[i]; got.hi != 0 || int64(got.lo) != m.short[i] || sim.stats.bound[i] != m.bound[i] {
				t.Fatalf("trial %d (reject %v): limit %d bound %d, short %v; model %d, %d\ntrace:\n%s", trial, reject, i, sim.stats.bound[i], got, m.bound[i], m.short[i], tr)
			}
		}
	}
}

func runTrace(sim *simulator, tr string) error {
	rd := newTraceReader(strings.NewReader(tr))
	for {
		req, err := rd.Next()
		if err != nil {
			if err.Error() == "EOF" {
				sim.finish()
				return nil
			}
			return err
		}
		if err := sim.add(req, rd.Line()); err != nil {
			return err
		}
	}
}

// TestKeyEvictionExact checks that dropping idle keys changes nothing: a
// simulator sweeping after every request decides every request, and
// reports every figure and chart point, exactly as one that never sweeps.
func TestKeyEvictionExact(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 40 {
		reject := trial%2 == 1
		limits, maxCost := randomLimits(r, reject)
		interval := limits[0].rate.Period() / time.Duration(max(1, limits[0].rate.Tokens()))
		tr := randomTrace(r, 500, max(interval/8, 1), maxCost, 1+r.IntN(40))

		type dec struct {
			at time.Duration
			ok bool
		}
		run := func(sweepMin int) (*simulator, []dec) {
			sim := newSimulator(simConfig{limits: limits, reject: reject, chart: true, sweepMin: sweepMin})
			var ds []dec
			sim.decided = func(_, at time.Duration, ok bool) { ds = append(ds, dec{at, ok}) }
			if err := runTrace(sim, tr); err != nil {
				t.Fatal(err)
			}
			return sim, ds
		}
		eager, de := run(1)
		lazy, dl := run(1 << 30)
		for i := range de {
			if de[i] != dl[i] {
				t.Fatalf("trial %d: request %d decided %+v with eviction, %+v without", trial, i, de[i], dl[i])
			}
		}
		var se, sl strings.Builder
		writeSummary(&se, "t", eager)
		writeSummary(&sl, "t", lazy)
		if se.String() != sl.String() {
			t.Fatalf("trial %d: summaries differ:\n%s\n%s", trial, se.String(), sl.String())
		}
		for i := range limits {
			if fmt.Sprint(eager.series.levels(i)) != fmt.Sprint(lazy.series.levels(i)) {
				t.Fatalf("trial %d: level series of limit %d differ", trial, i)
			}
		}
	}
}

// TestKeyEvictionBoundsMemory checks that a trace touching many keys once
// each holds only the recently active ones.
func TestKeyEvictionBoundsMemory(t *testing.T) {
	var b strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&b, "%d,1,key%d\n", i, i) // one request a second, each key once
	}
	limits := benchLimits(t) // full again a minute after its one request
	sim := newSimulator(simConfig{limits: limits, sweepMin: 1024})
	peak := 0
	sim.decided = func(_, _ time.Duration, _ bool) { peak = max(peak, len(sim.keys)) }
	if err := runTrace(sim, b.String()); err != nil {
		t.Fatal(err)
	}
	if peak > 1024 {
		t.Errorf("held %d keys at once; at most 1024 expected", peak)
	}
	if sim.stats.accepted != 100_000 || sim.stats.waited != 0 {
		t.Errorf("accepted %d, waited %d", sim.stats.accepted, sim.stats.waited)
	}
}
