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
// advance and memory stays fixed. Each bin keeps, per level line (a limit
// of one of the keys drawn), the lowest and the highest level seen (with
// their instants: the line drawn through them keeps every dip and peak);
// and for each outcome the count and the decision that left the least
// headroom. The tokens each limit spent go to windows of its own period.
type series struct {
	lines  int // level lines: limits × keys drawn
	n      int
	origin time.Duration
	width  time.Duration
	end    time.Duration // the latest decision
	bins   []bin
	lv     []levelAgg // bin j, line i at j*lines+i
	spent  []windows  // per limit
	waited uint64     // requests that waited, in wait mode
	wait   time.Duration
}

type bin struct {
	accepted, rejected uint64
	acceptMark         mark // accepted decision with the lowest headroom
	rejectMark         mark
	waitMark           mark // the longest wait, in seconds, at its grant
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

func (m *mark) keepHighest(o mark) {
	if o.set && (!m.set || o.v > m.v) {
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

// newSeries returns a series of n bins for lines level lines and a
// throughput line for each limit, of the given periods.
func newSeries(lines, n int, periods []time.Duration) *series {
	s := &series{
		lines: lines,
		n:     n,
		width: time.Microsecond,
		bins:  make([]bin, n),
		lv:    make([]levelAgg, n*lines),
	}
	for _, p := range periods {
		s.spent = append(s.spent, newWindows(p))
	}
	return s
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
	L := s.lines
	for j := 0; j < s.n/2; j++ {
		a, b := s.bins[2*j], s.bins[2*j+1]
		a.accepted += b.accepted
		a.rejected += b.rejected
		a.acceptMark.keepLowest(b.acceptMark)
		a.rejectMark.keepLowest(b.rejectMark)
		a.waitMark.keepHighest(b.waitMark)
		s.bins[j] = a
		for i := range L {
			la := s.lv[2*j*L+i]
			la.merge(s.lv[(2*j+1)*L+i])
			s.lv[j*L+i] = la
		}
	}
	if s.n%2 == 1 {
		// An odd last bin becomes the first half of a wide one.
		j := s.n / 2
		s.bins[j] = s.bins[s.n-1]
		copy(s.lv[j*L:(j+1)*L], s.lv[(s.n-1)*L:])
	}
	keep := (s.n + 1) / 2
	clear(s.bins[keep:])
	clear(s.lv[keep*L:])
	s.width *= 2
}

// add records a decision at t: the levels of each limit before and after
// it, in % of capacity, drawn on the level lines from line on (line < 0
// for a key not drawn), and the costs it took when ok.
func (s *series) add(t time.Duration, ok bool, line int, before, after []float64, costs []int64) {
	j := s.index(t)
	s.end = max(s.end, t)
	b := &s.bins[j]
	m := mark{t: t, v: after[0], set: true}
	for i := range before {
		if line >= 0 {
			agg := &s.lv[j*s.lines+line+i]
			agg.add(t, before[i])
			agg.add(t, after[i])
		}
		m.v = min(m.v, after[i])
		if ok {
			s.spent[i].add(t-s.origin, float64(costs[i]))
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

// counts returns the decisions accepted and rejected.
func (s *series) counts() (accepted, rejected uint64) {
	for _, b := range s.bins {
		accepted += b.accepted
		rejected += b.rejected
	}
	return accepted, rejected
}

// addWait records a request granted at t after waiting wait > 0.
func (s *series) addWait(t, wait time.Duration) {
	j := s.index(t)
	s.end = max(s.end, t)
	s.waited++
	s.wait = max(s.wait, wait)
	s.bins[j].waitMark.keepHighest(mark{t: t, v: wait.Seconds(), set: true})
}

// waits returns the longest wait of each bin, in seconds, at its grant.
func (s *series) waits() []point {
	var out []point
	for _, b := range s.bins {
		if b.waitMark.set {
			out = append(out, point{secs(b.waitMark.t), b.waitMark.v})
		}
	}
	return out
}

// point is one point of a drawn series, in seconds and percent.
type point struct{ x, y float64 }

func secs(t time.Duration) float64 { return t.Seconds() }

// levels returns level line i, in time order.
func (s *series) levels(i int) []point {
	var out []point
	for j := range s.n {
		a := s.lv[j*s.lines+i]
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

// throughput returns the tokens limit l, the i-th, spent in each window of
// its period, in % of the tokens its rate adds over one.
func (s *series) throughput(i int, l limitSpec) []point {
	w := &s.spent[i]
	perWindow := float64(l.rate.Tokens()) * float64(w.width) / float64(l.rate.Period())
	return w.points(s.origin, perWindow)
}

// throughputEnd returns the end of the last throughput window.
func (s *series) throughputEnd() time.Duration {
	end := s.end
	for _, w := range s.spent {
		end = max(end, s.origin+time.Duration(w.n)*w.width)
	}
	return end
}
