//go:build chart

package main

// The chart drawing, with gonum/plot, is built only with the tag chart, so
// that the commands that draw no chart (the demo, first of all) need none
// of its libraries: a build without it that is asked for a chart runs the
// command again from a build with it (chart_exec.go).

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// chartsBuiltIn says this build draws charts itself.
const chartsBuiltIn = true

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

// chartKeys says whose levels a chart draws: the keys with level lines,
// in line order ("" for a trace without keys), and how many keys the
// trace had.
type chartKeys struct {
	drawn []string
	total int
}

// chartPlots builds the two panels of the chart: the level of each limit
// (of each key drawn) with the accepted and rejected requests as marks,
// and the throughput of each limit, over windows of its own period,
// against its configured rate.
func chartPlots(s *series, limits []limitSpec, title string, keys chartKeys) (level, rate *plot.Plot, err error) {
	multi := keys.total > 1
	level = plot.New()
	level.Title.Text = title
	switch {
	case multi && len(keys.drawn) < keys.total:
		level.Title.Text += fmt.Sprintf("\nlevels of the first %d of %d keys; marks for every key", len(keys.drawn), keys.total)
	case multi:
		level.Title.Text += fmt.Sprintf("\nlevels of each of the %d keys", keys.total)
	}
	level.X.Label.Text = "time (s)"
	level.Y.Label.Text = "level (% of burst)"
	level.Y.Min, level.Y.Max = 0, 100
	level.Legend.Top = true
	level.Add(plotter.NewGrid())

	rate = plot.New()
	rate.Title.Text = "Tokens spent in each window of the limit's period"
	rate.X.Label.Text = "time (s)"
	rate.Y.Label.Text = "tokens a window, % of rate"
	if multi {
		rate.Y.Label.Text = "tokens a window, % of one key's rate"
	}
	rate.Y.Min, rate.Y.Max = 0, 100
	rate.Legend.Top = true
	rate.Add(plotter.NewGrid())

	drawn := max(1, len(keys.drawn))
	for k := range drawn {
		for i, l := range limits {
			c := limitColor(k*len(limits) + i)
			line, err := plotter.NewLine(xys(s.levels(k*len(limits) + i)))
			if err != nil {
				return nil, nil, fmt.Errorf("level of %s: %w", l.name, err)
			}
			line.Color = c
			line.Width = vg.Points(0.75)
			level.Add(line)
			name := l.name + " " + l.rateText
			if multi {
				name = fmt.Sprintf("key %q: %s", keys.drawn[k], name)
			}
			level.Legend.Add(name, line)
		}
	}
	for i, l := range limits {
		tp, err := plotter.NewLine(xys(s.throughput(i, l)))
		if err != nil {
			return nil, nil, fmt.Errorf("throughput of %s: %w", l.name, err)
		}
		tp.Color = limitColor(i)
		tp.Width = vg.Points(1)
		rate.Add(tp)
		rate.Legend.Add(l.name+", "+s.spent[i].label(), tp)
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
	level.Y.Max = 100 * legendRoom(drawn*len(limits)+2)
	level.Y.Tick.Marker = upTo{100}
	rate.Y.Max = max(rate.Y.Max, 100) * legendRoom(len(limits)+1)
	rate.Y.Tick.Marker = upTo{max(rate.Y.Max/legendRoom(len(limits)+1), 100)}

	// The configured rate is 100% of every limit's own rate.
	x0, x1 := secs(s.origin), secs(s.throughputEnd())
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

// writeChart renders the chart to f, with the extra panels below.
func writeChart(f *chartFile, s *series, limits []limitSpec, title string, keys chartKeys, extra ...*plot.Plot) error {
	level, rate, err := chartPlots(s, limits, title, keys)
	if err != nil {
		return err
	}
	panels := [][]*plot.Plot{{level}, {rate}}
	for _, p := range extra {
		panels = append(panels, []*plot.Plot{p})
	}
	// One time axis for every panel, so that they line up.
	lo, hi := level.X.Min, level.X.Max
	for _, row := range panels {
		lo, hi = min(lo, row[0].X.Min), max(hi, row[0].X.Max)
	}
	for _, row := range panels {
		row[0].X.Min, row[0].X.Max = lo, hi
	}
	return f.write(panels)
}

// write draws the plots, one tile each, and closes the file.
func (c *chartFile) write(plots [][]*plot.Plot) error {
	// 10 cm a panel.
	width, height := 24*vg.Centimeter, vg.Length(len(plots))*10*vg.Centimeter
	var cw interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch c.format {
	case "png":
		// 150 dots per inch: sharp enough to read, 1417×1181 pixels.
		cw = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(150))}
	case "pdf":
		cw = vgpdf.New(width, height)
	default:
		cw = vgsvg.New(width, height)
	}
	dc := draw.New(cw)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4, PadY: vg.Millimeter * 6}
	c.done = true
	canvases := plot.Align(plots, tiles, dc)
	for i, row := range plots {
		row[0].Draw(canvases[i][0])
	}
	if _, err := cw.WriteTo(c.f); err != nil {
		c.f.Close()
		return err
	}
	return c.f.Close()
}

// writeSimulateChart draws simulate's chart: levels, throughput and, with
// --compare, the algorithms' panel.
func writeSimulateChart(chart *chartFile, sim *simulator, limits []limitSpec, name string) error {
	keys := chartKeys{drawn: sim.drawn, total: sim.stats.keys.len()}
	var extra []*plot.Plot
	if sim.cmp != nil {
		p, err := comparePlot(sim.cmp)
		if err != nil {
			return err
		}
		extra = append(extra, p)
	}
	return writeChart(chart, sim.series, limits, "Level of each limit: "+name, keys, extra...)
}

// writeDemoChart draws the demo's chart of the throttled client's run.
func writeDemoChart(chart *chartFile, s *series, client limitSpec, title string) error {
	return writeChart(chart, s, []limitSpec{client}, title, chartKeys{})
}
