//go:build chart

package main

import (
	"fmt"
	"slices"

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
	p.Title.Text = fmt.Sprintf("Requests admitted in the trailing %v, by algorithm\n(highest of each time bin, of any key)", window)
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = fmt.Sprintf("requests in %v", window)
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true // samples left of their text, which a substituted font widens
	p.Add(plotter.NewGrid())
	top := 0.0
	lines := make([][]point, len(c.algs))
	for a := range c.algs {
		lines[a] = c.chart.line(a)
		for _, q := range lines[a] {
			top = max(top, q.y)
		}
	}
	for a, alg := range c.algs {
		pts := lines[a]
		name := alg.name
		// A line on top of an earlier one's would hide it: say so, and
		// draw each narrower and with its own dashes than the one before,
		// so that both show.
		for b := range a {
			if slices.Equal(pts, lines[b]) {
				name += " (identical to " + c.algs[b].name + ")"
				break
			}
		}
		// Points too: a line of one point would not show.
		l, pt, err := plotter.NewLinePoints(xys(pts))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", alg.name, err)
		}
		col := cmpColors[a%len(cmpColors)]
		l.Color = col
		l.Width = vg.Points(3.5 - 0.5*float64(a%len(cmpColors)))
		l.Dashes = cmpDashes[a%len(cmpDashes)]
		pt.Color = col
		pt.Radius = vg.Points(2)
		pt.Shape = glyphs[a%len(glyphs)]
		p.Add(l, pt)
		addEntry(p, name, len(pts), l, pt)
	}
	p.Y.Max = max(top, 1) * legendRoom(len(c.algs))
	p.Y.Tick.Marker = roundTicks{max(top, 1)}
	return p, nil
}

// cmpDashes tell the algorithms' lines apart where they overlap.
var cmpDashes = [][]vg.Length{
	nil,
	{vg.Points(8), vg.Points(4)},
	{vg.Points(2), vg.Points(3)},
	{vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)},
	{vg.Points(4), vg.Points(4)},
	{vg.Points(1), vg.Points(2)},
}
