package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestSeriesMergesWithoutLoss feeds decisions over a span far wider than
// the first bins and checks that merging keeps the counts, the tokens
// spent and the extreme levels, and never holds more than n bins.
func TestSeriesMergesWithoutLoss(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{2, 5, 8, 64} {
		s := newSeries(2, n, []time.Duration{time.Second, time.Hour})
		s.origin = 5 * time.Second
		var acc, rej uint64
		var spent [2]float64
		lo, hi := [2]float64{101, 101}, [2]float64{-1, -1}
		at := s.origin
		for i := range 5000 {
			at += time.Duration(r.Int64N(int64(time.Duration(i+1) * time.Millisecond)))
			ok := r.IntN(3) > 0
			before := []float64{r.Float64() * 100, r.Float64() * 100}
			after := []float64{before[0] / 2, before[1] / 3}
			costs := []int64{1, int64(1 + r.IntN(10))}
			s.add(at, ok, 0, before, after, costs)
			if ok {
				acc++
				spent[0] += float64(costs[0])
				spent[1] += float64(costs[1])
			} else {
				rej++
			}
			for k := range 2 {
				lo[k] = min(lo[k], after[k])
				hi[k] = max(hi[k], before[k])
			}
		}
		var gotAcc, gotRej uint64
		var gotSpent [2]float64
		for k := range 2 {
			for _, v := range s.spent[k].spent {
				gotSpent[k] += v
			}
		}
		for _, b := range s.bins {
			gotAcc += b.accepted
			gotRej += b.rejected
		}
		if gotAcc != acc || gotRej != rej || gotSpent != spent {
			t.Errorf("n=%d: counts %d/%d, spent %v; want %d/%d, %v", n, gotAcc, gotRej, gotSpent, acc, rej, spent)
		}
		if last := s.origin + time.Duration(n)*s.width; at >= last {
			t.Errorf("n=%d: last decision %v beyond the bins' end %v", n, at, last)
		}
		for k := range 2 {
			pts := s.levels(k)
			if len(pts) > 2*n {
				t.Errorf("n=%d: %d level points", n, len(pts))
			}
			mn, mx := 101.0, -1.0
			for i, p := range pts {
				mn, mx = min(mn, p.y), max(mx, p.y)
				if i > 0 && p.x < pts[i-1].x {
					t.Errorf("n=%d: level points out of time order at %d", n, i)
				}
			}
			if mn != lo[k] || mx != hi[k] {
				t.Errorf("n=%d limit %d: level range [%v, %v], want [%v, %v]", n, k, mn, mx, lo[k], hi[k])
			}
		}
	}
}

// TestSeriesSawTooth checks the drawn series of a small known run.
func TestSeriesSawTooth(t *testing.T) {
	limits := benchLimitsFrom(t, "r=1/1s,burst=2")
	sim := newSimulator(simConfig{limits: limits, reject: true, chart: true})
	if err := runTrace(sim, "0\n0\n0\n"); err != nil {
		t.Fatal(err)
	}
	// One bin: the level went from 100% to 0%, at one instant; the
	// third request was rejected at 0%.
	want := []point{{0, 100}, {0, 0}}
	if got := sim.series.levels(0); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("levels = %v, want %v", got, want)
	}
	if got := sim.series.marks(true); len(got) != 1 || got[0] != (point{0, 0}) {
		t.Errorf("accepted marks = %v", got)
	}
	if got := sim.series.marks(false); len(got) != 1 || got[0] != (point{0, 0}) {
		t.Errorf("rejected marks = %v", got)
	}
	// Everything at one instant: 2 tokens in the first window of 1 s,
	// twice the rate (the burst).
	want = []point{{0, 200}, {1, 200}}
	if got := sim.series.throughput(0, limits[0]); !slices.Equal(got, want) {
		t.Errorf("throughput = %v, want %v", got, want)
	}

	sim = newSimulator(simConfig{limits: limits, chart: true})
	if err := runTrace(sim, "0\n0\n0\n0\n"); err != nil {
		t.Fatal(err)
	}
	// Waiting: grants at 0, 0, 1 s and 2 s: the burst of 2 in the first
	// window, then one token a second, the rate.
	if sim.stats.end != 2*time.Second {
		t.Fatalf("end %v, want 2s", sim.stats.end)
	}
	want = []point{{0, 200}, {1, 200}, {1, 100}, {2, 100}, {2, 100}, {3, 100}}
	if got := sim.series.throughput(0, limits[0]); !slices.Equal(got, want) {
		t.Errorf("throughput = %v, want %v", got, want)
	}
}

// TestWindowsMerge: past maxWindows periods, windows merge in pairs and say
// so, keeping every token.
func TestWindowsMerge(t *testing.T) {
	w := newWindows(time.Second)
	for i := range 3 * maxWindows {
		w.add(time.Duration(i)*time.Second+time.Second/2, 1)
	}
	if w.width != 4*time.Second || w.n != 3*maxWindows/4 || w.label() != "per 4s window (4 periods)" {
		t.Fatalf("width %v, %d windows, label %q", w.width, w.n, w.label())
	}
	var sum float64
	for j, v := range w.spent {
		sum += v
		if j < w.n && v != 4 {
			t.Fatalf("window %d holds %v tokens, want 4", j, v)
		}
	}
	if sum != 3*maxWindows {
		t.Errorf("%v tokens kept, want %d", sum, 3*maxWindows)
	}
	// 4 tokens per 4 s window at 1/s: 100%.
	if p := w.points(0, 4); len(p) != 2*w.n || p[0] != (point{0, 100}) || p[len(p)-1] != (point{float64(3 * maxWindows), 100}) {
		t.Errorf("points %v ... %v", p[:2], p[len(p)-2:])
	}
}

// TestSeriesLinePerKey: each of the first keyLines keys gets its own level
// line; later keys none.
func TestSeriesLinePerKey(t *testing.T) {
	limits := benchLimitsFrom(t, "r=1/1s,burst=2")
	sim := newSimulator(simConfig{limits: limits, reject: true, chart: true})
	if err := runTrace(sim, "0,1,a\n0,1,b\n0,1,c\n0,1,d\n0,1,a\n"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sim.drawn, []string{"a", "b", "c"}) {
		t.Fatalf("drawn %q", sim.drawn)
	}
	want := [][]point{{{0, 100}, {0, 0}}, {{0, 100}, {0, 50}}, {{0, 100}, {0, 50}}}
	for i, w := range want {
		if got := sim.series.levels(i); !slices.Equal(got, w) {
			t.Errorf("key %s: levels %v, want %v", sim.drawn[i], got, w)
		}
	}
}
