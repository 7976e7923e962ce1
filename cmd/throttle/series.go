package main

import (
	"time"
)

// chartBins is how many time bins the chart's series keep, whatever the
// length of the trace.
const chartBins = 512

// series downsamples the decisions of a simulation into at most n time
// bins, for the chart. The bins start at the first arrival and are all as
// wide; when a decision falls past the last bin, neighbouring bins are
// merged in pairs and the width doubles, so the span needs not be known in
// advance and memory stays fixed. Each bin keeps, per limit, the lowest and
// the highest level seen (with their instants: the line drawn through them
// keeps every dip and peak) and the tokens spent; and for each outcome the
// count and the decision that left the least headroom.
type series struct {
	limits int
	n      int
	origin time.Duration
	width  time.Duration
	end    time.Duration // the latest decision
	bins   []bin
	lv     []levelAgg // bin j, limit i at j*limits+i
	spent  []float64  // likewise
}

type bin struct {
	accepted, rejected uint64
	acceptMark         mark // accepted decision with the lowest headroom
	rejectMark         mark
}

// mark is a decision drawn on the chart: its instant and the lowest level
// of its limits right after it, in % of capacity.
type mark struct {
	t   time.Duration
	v   float64
	set bool
}

func (m *mark) keepLowest(o mark) {
	if o.set && (!m.set || o.v < m.v) {
		*m = o
	}
}

// levelAgg is the lowest and highest level of a limit within a bin.
type levelAgg struct {
	minT, maxT time.Duration
	min, max   float64
	set        bool
}

func (a *levelAgg) add(t time.Duration, v float64) {
	if !a.set {
		*a = levelAgg{minT: t, maxT: t, min: v, max: v, set: true}
		return
	}
	if v < a.min {
		a.min, a.minT = v, t
	}
	if v > a.max {
		a.max, a.maxT = v, t
	}
}

func (a *levelAgg) merge(o levelAgg) {
	if o.set {
		a.add(o.minT, o.min)
		a.add(o.maxT, o.max)
	}
}

func newSeries(limits, n int) *series {
	return &series{
		limits: limits,
		n:      n,
		width:  time.Microsecond,
		bins:   make([]bin, n),
		lv:     make([]levelAgg, n*limits),
		spent:  make([]float64, n*limits),
	}
}

// index returns the bin of t, widening the bins until t fits.
func (s *series) index(t time.Duration) int {
	for {
		j := (t - s.origin) / s.width
		if j < time.Duration(s.n) {
			return int(j)
		}
		s.halve()
	}
}

// halve merges bins in pairs, doubling their width.
func (s *series) halve() {
	L := s.limits
	for j := 0; j < s.n/2; j++ {
		a, b := s.bins[2*j], s.bins[2*j+1]
		a.accepted += b.accepted
		a.rejected += b.rejected
		a.acceptMark.keepLowest(b.acceptMark)
		a.rejectMark.keepLowest(b.rejectMark)
		s.bins[j] = a
		for i := range L {
			la := s.lv[2*j*L+i]
			la.merge(s.lv[(2*j+1)*L+i])
			s.lv[j*L+i] = la
			s.spent[j*L+i] = s.spent[2*j*L+i] + s.spent[(2*j+1)*L+i]
		}
	}
	if s.n%2 == 1 {
		// An odd last bin becomes the first half of a wide one.
		j := s.n / 2
		s.bins[j] = s.bins[s.n-1]
		copy(s.lv[j*L:(j+1)*L], s.lv[(s.n-1)*L:])
		copy(s.spent[j*L:(j+1)*L], s.spent[(s.n-1)*L:])
	}
	keep := (s.n + 1) / 2
	clear(s.bins[keep:])
	clear(s.lv[keep*L:])
	clear(s.spent[keep*L:])
	s.width *= 2
}

// add records a decision at t: the levels before and after it, in % of
// capacity, and the costs it took when ok.
func (s *series) add(t time.Duration, ok bool, before, after []float64, costs []int64) {
	j := s.index(t)
	s.end = max(s.end, t)
	b := &s.bins[j]
	m := mark{t: t, v: after[0], set: true}
	for i := range s.limits {
		agg := &s.lv[j*s.limits+i]
		agg.add(t, before[i])
		agg.add(t, after[i])
		m.v = min(m.v, after[i])
		if ok {
			s.spent[j*s.limits+i] += float64(costs[i])
		}
	}
	if ok {
		b.accepted++
		b.acceptMark.keepLowest(m)
	} else {
		b.rejected++
		b.rejectMark.keepLowest(m)
	}
}

// point is one point of a drawn series, in seconds and percent.
type point struct{ x, y float64 }

func secs(t time.Duration) float64 { return t.Seconds() }

// levels returns the level line of limit i, in time order.
func (s *series) levels(i int) []point {
	var out []point
	for j := range s.n {
		a := s.lv[j*s.limits+i]
		if !a.set {
			continue
		}
		// In time order; at one instant the level before a decision, the
		// higher, comes first.
		p, q := point{secs(a.minT), a.min}, point{secs(a.maxT), a.max}
		if a.maxT <= a.minT {
			p, q = q, p
		}
		out = append(out, p)
		if q != p {
			out = append(out, q)
		}
	}
	return out
}

// marks returns the accepted or the rejected marks, one per bin at most.
func (s *series) marks(accepted bool) []point {
	var out []point
	for _, b := range s.bins {
		m := b.rejectMark
		if accepted {
			m = b.acceptMark
		}
		if m.set {
			out = append(out, point{secs(m.t), m.v})
		}
	}
	return out
}

// throughputGroup is how many bins one point of the throughput line
// covers: a rate over single bins is mostly noise.
const throughputGroup = 4

// throughput returns the tokens limit i spent per second, in % of
// perSecond, over groups of bins up to the last decision, each at the
// middle of its group.
func (s *series) throughput(i int, perSecond float64) []point {
	var out []point
	w := s.width * throughputGroup
	for j := 0; j < s.n && perSecond > 0; j += throughputGroup {
		start := s.origin + time.Duration(j)*s.width
		// The last group is cut at the last decision, so that its rate is
		// not diluted by time the trace does not cover.
		var spent float64
		for k := j; k < min(j+throughputGroup, s.n); k++ {
			spent += s.spent[k*s.limits+i]
		}
		d := min(w, s.end-start)
		if d <= 0 {
			if spent == 0 || j == 0 {
				// Nothing after, or every decision at one instant: no
				// rate to speak of.
				break
			}
			// The last decision starts this group: spread it over one
			// bin rather than lose it.
			d = s.width
		}
		out = append(out, point{secs(start + d/2), spent / d.Seconds() / perSecond * 100})
	}
	return out
}
