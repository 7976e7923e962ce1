//go:build chart

package main

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

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
