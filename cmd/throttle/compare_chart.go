package main

import (
	"fmt"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

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

// glyphs tell the algorithms apart where their lines lie on each other.
var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.PlusGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}, draw.TriangleGlyph{}, draw.RingGlyph{}}

// comparePlot draws a line per algorithm of the requests one key had
// admitted in the trailing window of the first limit's period.
func comparePlot(c *comparer) (*plot.Plot, error) {
	p := plot.New()
	window := c.limits[0].rate.Period()
	p.Title.Text = fmt.Sprintf("Requests admitted in the trailing %v, by algorithm (highest of each time bin, of any key)", window)
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = fmt.Sprintf("requests in %v", window)
	p.Y.Min = 0
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	top := 0.0
	for a, alg := range c.algs {
		pts := c.chart.line(a)
		for _, q := range pts {
			top = max(top, q.y)
		}
		// Points too: a line of one point would not show.
		l, pt, err := plotter.NewLinePoints(xys(pts))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", alg.name, err)
		}
		l.Color = limitColor(a)
		l.Width = vg.Points(1)
		pt.Color = limitColor(a)
		pt.Radius = vg.Points(1.5)
		pt.Shape = glyphs[a%len(glyphs)]
		p.Add(l, pt)
		p.Legend.Add(alg.name, l, pt)
	}
	p.Y.Max = max(top, 1) * legendRoom(len(c.algs))
	p.Y.Tick.Marker = upTo{max(top, 1)}
	return p, nil
}
