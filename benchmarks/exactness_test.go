package benchmarks

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"golang.org/x/time/rate"
)

// ratModel is the ideal token bucket in exact rational arithmetic: it
// starts full, refills continuously at tokens/period, never holds more
// than capacity, and grants a request iff the level covers its cost.
type ratModel struct {
	level, capacity, perNS *big.Rat
	last                   int64 // ns
}

func newRatModel(capacity, tokens int64, period time.Duration) *ratModel {
	return &ratModel{
		level:    new(big.Rat).SetInt64(capacity),
		capacity: new(big.Rat).SetInt64(capacity),
		perNS:    big.NewRat(tokens, int64(period)),
	}
}

func (m *ratModel) allow(now, cost int64) bool {
	if now > m.last {
		add := new(big.Rat).Mul(m.perNS, new(big.Rat).SetInt64(now-m.last))
		m.level.Add(m.level, add)
		if m.level.Cmp(m.capacity) > 0 {
			m.level.Set(m.capacity)
		}
		m.last = now
	}
	c := new(big.Rat).SetInt64(cost)
	if m.level.Cmp(c) < 0 {
		return false
	}
	m.level.Sub(m.level, c)
	return true
}

// grantsWithin reports whether the level, after a refusal at m.last, covers
// cost d nanoseconds later.
func (m *ratModel) grantsWithin(cost, d int64) bool {
	l := new(big.Rat).Mul(m.perNS, new(big.Rat).SetInt64(d))
	l.Add(l, m.level)
	return l.Cmp(new(big.Rat).SetInt64(cost)) >= 0
}

// divergence counts how one limiter's decisions differ from the model's.
// Only the first differing decision of a trace is classified: after it the
// two states differ and later decisions follow from that one.
type divergence struct {
	traces    int // traces with at least one differing decision
	decisions int // differing decisions, first or not
	over      int // first divergences that grant what the model refuses
	early     int // of those, grants less than 1 ns before the model's
	under     int // first divergences that refuse what the model grants
}

func (d *divergence) add(m *ratModel, cost int64, got, want bool, first *bool) {
	if got == want {
		return
	}
	d.decisions++
	if !*first {
		return
	}
	*first = false
	d.traces++
	switch {
	case !got:
		d.under++
	case m.grantsWithin(cost, 1):
		d.over++
		d.early++
	default:
		d.over++
	}
}

// exactnessTrace is one generated workload.
type exactnessTrace struct {
	capacity, tokens int64
	period           time.Duration
	at, cost         []int64 // request instants (ns from the start) and costs
}

// genTrace makes a trace whose gaps cluster around the emission interval
// period/tokens. With boundary unset, a gap is the interval give or take 1%
// (one gap in ten is anything from 0 to capacity intervals). With boundary
// set, gaps are the interval or a multiple of it give or take a nanosecond
// or two, or bursts: the exact level then sits on or right next to a whole
// token, where any rounding flips the decision.
func genTrace(rng *rand.Rand, steps int, boundary bool) exactnessTrace {
	tr := exactnessTrace{capacity: rng.Int64N(10) + 1, tokens: rng.Int64N(1000) + 1}
	switch rng.IntN(4) {
	case 0:
		tr.period = time.Second
	case 1:
		tr.period = time.Minute
	case 2:
		tr.period = time.Duration(rng.Int64N(1000)+1) * time.Millisecond
	default:
		tr.period = time.Duration(rng.Int64N(int64(3*time.Second))) + 1
	}
	p, n := int64(tr.period), tr.tokens
	var now int64
	for range steps {
		var gap int64
		switch r := rng.IntN(100); {
		case !boundary && r < 90:
			iv := p / n
			gap = iv + rng.Int64N(iv/50+3) - iv/100 - 1
		case !boundary:
			gap = rng.Int64N(tr.capacity*p/n + 1)
		case r < 60: // one interval, floor or ceiling, nudged
			gap = p/n + rng.Int64N(4) - 1
		case r < 75: // k intervals
			k := rng.Int64N(tr.capacity) + 2
			gap = k*p/n + rng.Int64N(3) - 1
		case r < 90: // a burst
			gap = 0
		default:
			gap = rng.Int64N(tr.capacity*p/n + 1)
		}
		now += max(gap, 0)
		cost := int64(1)
		if rng.IntN(5) == 0 {
			cost = rng.Int64N(tr.capacity) + 1
		}
		tr.at = append(tr.at, now)
		tr.cost = append(tr.cost, cost)
	}
	return tr
}

// TestExactness runs random traces through throttle, x/time/rate and the
// rational model, and reports the share of traces on which each library
// makes at least one decision the model does not. Ours must never differ.
// Run it with -v to see the figures.
func TestExactness(t *testing.T) {
	for _, boundary := range []bool{false, true} {
		name := "gaps=jitter"
		if boundary {
			name = "gaps=boundary"
		}
		t.Run(name, func(t *testing.T) { exactness(t, boundary) })
	}
}

func exactness(t *testing.T, boundary bool) {
	traces, steps := 5000, 100
	if testing.Short() {
		traces = 500
	}
	rng := rand.New(rand.NewPCG(2026, 11))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ours, xr divergence
	decisions, grants := 0, 0
	for i := range traces {
		tr := genTrace(rng, steps, boundary)
		clk := clockwork.NewFakeClockAt(base)
		bk, err := throttle.New(tr.capacity, throttle.Per(tr.tokens, tr.period), throttle.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		lim := rate.NewLimiter(rate.Limit(float64(tr.tokens)/tr.period.Seconds()), int(tr.capacity))
		m := newRatModel(tr.capacity, tr.tokens, tr.period)
		firstOurs, firstXR := true, true
		for j, at := range tr.at {
			now := base.Add(time.Duration(at))
			clk.Advance(now.Sub(clk.Now()))
			cost := tr.cost[j]
			want := m.allow(at, cost)
			got, err := bk.TryAcquire(cost)
			if err != nil {
				t.Fatal(err)
			}
			if got != want && firstOurs {
				t.Errorf("trace %d (capacity %d, %d per %v) step %d at %dns cost %d: throttle says %v, model %v",
					i, tr.capacity, tr.tokens, tr.period, j, at, cost, got, want)
			}
			ours.add(m, cost, got, want, &firstOurs)
			xr.add(m, cost, lim.AllowN(now, int(cost)), want, &firstXR)
			decisions++
			if want {
				grants++
			}
		}
	}
	share := func(d divergence) float64 { return 100 * float64(d.traces) / float64(traces) }
	t.Logf("%d traces, %d decisions (%d granted by the model)", traces, decisions, grants)
	for _, r := range []struct {
		lib string
		d   divergence
	}{{"throttle", ours}, {"x/time/rate", xr}} {
		t.Logf("%-12s %5.2f%% of traces diverge (%d decisions); first divergences: %d over-admissions (%d less than 1 ns early), %d under-admissions",
			r.lib+":", share(r.d), r.d.decisions, r.d.over, r.d.early, r.d.under)
	}
	// The generator exists to put decisions where rounding matters: if the
	// model never refuses, or x/time/rate never slips on the boundary
	// traces, it no longer does.
	if grants == decisions || grants == 0 {
		t.Errorf("the model granted %d of %d decisions: the traces do not test the boundary", grants, decisions)
	}
	if boundary && xr.traces == 0 {
		t.Errorf("x/time/rate never diverged: the traces no longer hit the float rounding they are meant to")
	}
}
