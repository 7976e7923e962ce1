package main

import "time"

// cmpSeries downsamples, for the chart, each algorithm's count of requests
// admitted in the trailing window at each departure into at most n time
// bins, keeping the highest count of each bin and its instant; bins widen
// as series' do.
type cmpSeries struct {
	algs, n int
	origin  time.Duration
	width   time.Duration
	peaks   []peak // bin j, algorithm a at j*algs+a
	started bool
}

type peak struct {
	t   time.Duration
	v   float64
	set bool
}

func newCmpSeries(algs, n int) *cmpSeries {
	return &cmpSeries{algs: algs, n: n, width: time.Microsecond, peaks: make([]peak, algs*n)}
}

func (s *cmpSeries) empty() bool { return !s.started }

func (s *cmpSeries) keep(j, a int, p peak) {
	q := &s.peaks[j*s.algs+a]
	if p.set && (!q.set || p.v > q.v) {
		*q = p
	}
}

// add records count v for algorithm a at t, which is never before origin.
func (s *cmpSeries) add(a int, t time.Duration, v float64) {
	s.started = true
	for (t-s.origin)/s.width >= time.Duration(s.n) {
		// Merge bins in pairs, doubling their width.
		for j := range (s.n + 1) / 2 {
			for b := range s.algs {
				x := s.peaks[2*j*s.algs+b]
				var y peak
				if 2*j+1 < s.n {
					y = s.peaks[(2*j+1)*s.algs+b]
				}
				s.peaks[j*s.algs+b] = peak{}
				s.keep(j, b, x)
				s.keep(j, b, y)
			}
		}
		clear(s.peaks[(s.n+1)/2*s.algs:])
		s.width *= 2
	}
	s.keep(int((t-s.origin)/s.width), a, peak{t: t, v: v, set: true})
}

// line returns algorithm a's peaks in time order.
func (s *cmpSeries) line(a int) []point {
	var out []point
	for j := range s.n {
		if p := s.peaks[j*s.algs+a]; p.set {
			out = append(out, point{secs(p.t), p.v})
		}
	}
	return out
}
