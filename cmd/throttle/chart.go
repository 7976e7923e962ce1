package main

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart colours. The golden test finds the series by these.
var (
	limitColors = []color.RGBA{
		{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
		{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
		{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
		{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
		{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // cyan
		{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, // olive
	}
	acceptColor = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	rejectColor = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	rateColor   = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
)

// limitColor is limit i's colour, a little transparent so that lines
// drawn over each other stay visible.
func limitColor(i int) color.NRGBA {
	c := limitColors[i%len(limitColors)]
	return color.NRGBA{R: c.R, G: c.G, B: c.B, A: 0xc0}
}

// legendRoom is the factor by which a plot's y range grows to leave room
// for a legend of n entries above the data.
func legendRoom(n int) float64 { return 1 + 0.07*float64(n) }

// upTo marks ticks as gonum does by default, but none above max: the room
// left for the legend is not part of the scale.
type upTo struct{ max float64 }

func (u upTo) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(lo, u.max) {
		if t.Value <= u.max {
			out = append(out, t)
		}
	}
	return out
}

func xys(ps []point) plotter.XYs {
	out := make(plotter.XYs, len(ps))
	for i, p := range ps {
		out[i].X, out[i].Y = p.x, p.y
	}
	return out
}

// chartPlots builds the two panels of the chart: the level of each limit
// with the accepted and rejected requests as marks, and the throughput of
// each limit against its configured rate.
func chartPlots(s *series, limits []limitSpec, title string) (level, rate *plot.Plot, err error) {
	level = plot.New()
	level.Title.Text = title
	level.X.Label.Text = "time (s)"
	level.Y.Label.Text = "level (% of burst)"
	level.Y.Min, level.Y.Max = 0, 100
	level.Legend.Top = true
	level.Add(plotter.NewGrid())

	rate = plot.New()
	rate.Title.Text = "Tokens spent per second"
	rate.X.Label.Text = "time (s)"
	rate.Y.Label.Text = "% of configured rate"
	rate.Y.Min, rate.Y.Max = 0, 100
	rate.Legend.Top = true
	rate.Add(plotter.NewGrid())

	for i, l := range limits {
		c := limitColor(i)
		line, err := plotter.NewLine(xys(s.levels(i)))
		if err != nil {
			return nil, nil, fmt.Errorf("level of %s: %w", l.name, err)
		}
		line.Color = c
		line.Width = vg.Points(0.75)
		level.Add(line)
		level.Legend.Add(l.name+" "+l.rateText, line)

		tp, err := plotter.NewLine(xys(s.throughput(i, l.perSecond())))
		if err != nil {
			return nil, nil, fmt.Errorf("throughput of %s: %w", l.name, err)
		}
		tp.Color = c
		tp.Width = vg.Points(1)
		rate.Add(tp)
		rate.Legend.Add(l.name, tp)
	}
	for _, m := range []struct {
		accepted bool
		name     string
		c        color.RGBA
		glyph    draw.GlyphDrawer
	}{
		{true, "accepted", acceptColor, draw.CircleGlyph{}},
		{false, "rejected", rejectColor, draw.CrossGlyph{}},
	} {
		sc, err := plotter.NewScatter(xys(s.marks(m.accepted)))
		if err != nil {
			return nil, nil, fmt.Errorf("%s marks: %w", m.name, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: m.c, Radius: vg.Points(2), Shape: m.glyph}
		level.Add(sc)
		level.Legend.Add(m.name, sc)
	}

	// Headroom above the data for the legend, which gonum draws inside the
	// plot area.
	level.Y.Max = 100 * legendRoom(len(limits)+2)
	level.Y.Tick.Marker = upTo{100}
	rate.Y.Max = max(rate.Y.Max, 100) * legendRoom(len(limits)+1)
	rate.Y.Tick.Marker = upTo{max(rate.Y.Max/legendRoom(len(limits)+1), 100)}

	// The configured rate is 100% of every limit's own rate.
	x0, x1 := secs(s.origin), secs(s.end)
	if x1 == x0 {
		x1 = x0 + 1
	}
	cfg, err := plotter.NewLine(plotter.XYs{{X: x0, Y: 100}, {X: x1, Y: 100}})
	if err != nil {
		return nil, nil, err
	}
	cfg.Color = rateColor
	cfg.Width = vg.Points(1.5)
	cfg.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	rate.Add(cfg)
	rate.Legend.Add("configured rate", cfg)
	return level, rate, nil
}

// writeChart renders the chart as SVG.
func writeChart(w io.Writer, s *series, limits []limitSpec, title string) error {
	level, rate, err := chartPlots(s, limits, title)
	if err != nil {
		return err
	}
	const width, height = 24 * vg.Centimeter, 20 * vg.Centimeter
	c := vgsvg.New(width, height)
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4, PadY: vg.Millimeter * 6}
	canvases := plot.Align([][]*plot.Plot{{level}, {rate}}, tiles, dc)
	level.Draw(canvases[0][0])
	rate.Draw(canvases[1][0])
	_, err = c.WriteTo(w)
	return err
}
