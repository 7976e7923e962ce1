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
	"math"
	"strconv"
	"time"

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

// roundTicks marks ticks at round values, 1, 2 or 5 times a power of ten
// apart, about six over the axis, labelled with no more decimals than the
// step has; none above max when max > 0 (the room left above the data for
// the legend is not part of the scale).
type roundTicks struct{ max float64 }

func (r roundTicks) Ticks(lo, hi float64) []plot.Tick {
	if r.max > 0 {
		hi = min(hi, r.max)
	}
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: fmtTick(lo, 1)}}
	}
	step := niceStep((hi - lo) / 6)
	var out []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9; i++ {
		v := i * step
		out = append(out, plot.Tick{Value: v, Label: fmtTick(v, step)})
		if m := v + step/2; m <= hi {
			out = append(out, plot.Tick{Value: m}) // a minor tick, unlabelled
		}
	}
	return out
}

// niceStep returns the least of 1, 2 and 5 times a power of ten that is at
// least x.
func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5} {
		if m*p >= x*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// fmtTick formats v with as many decimals as step needs.
func fmtTick(v, step float64) string {
	places := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	if math.Abs(v) < step*1e-9 {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', places, 64)
}

// addEntry adds a legend entry for a series of n points, none for an empty
// one: a legend says what the chart shows.
func addEntry(p *plot.Plot, name string, n int, thumbs ...plot.Thumbnailer) {
	if n > 0 {
		p.Legend.Add(name, thumbs...)
	}
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
	level.Legend.Top, level.Legend.Left = true, true // samples left of their text, which a substituted font widens
	level.Add(plotter.NewGrid())

	rate = plot.New()
	rate.Title.Text = "Tokens spent in each window of the limit's period"
	rate.X.Label.Text = "time (s)"
	rate.Y.Label.Text = "tokens a window, % of rate"
	if multi {
		rate.Y.Label.Text = "tokens a window, % of one key's rate"
	}
	rate.Y.Min, rate.Y.Max = 0, 100
	rate.Legend.Top, rate.Legend.Left = true, true // samples left of their text, which a substituted font widens
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
			addEntry(level, name, len(line.XYs), line)
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
		addEntry(rate, l.name+", "+s.spent[i].label(), len(tp.XYs), tp)
	}
	// Rejections drawn last, large and thick, so that one among many
	// acceptances is found at a glance.
	accepted, rejected := s.counts()
	for _, m := range []struct {
		accepted bool
		name     string
		n        uint64
		style    draw.GlyphStyle
	}{
		{true, "accepted", accepted, draw.GlyphStyle{Color: acceptColor, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}},
		{false, "rejected", rejected, draw.GlyphStyle{Color: rejectColor, Radius: vg.Points(4.5), Shape: thickCross{vg.Points(1.5)}}},
	} {
		sc, err := plotter.NewScatter(xys(s.marks(m.accepted)))
		if err != nil {
			return nil, nil, fmt.Errorf("%s marks: %w", m.name, err)
		}
		sc.GlyphStyle = m.style
		level.Add(sc)
		addEntry(level, fmt.Sprintf("%s (%d)", m.name, m.n), int(m.n), sc)
	}

	// Headroom above the data for the legend, which gonum draws inside the
	// plot area.
	level.Y.Max = 100 * legendRoom(drawn*len(limits)+2)
	level.Y.Tick.Marker = roundTicks{100}
	rate.Y.Max = max(rate.Y.Max, 100) * legendRoom(len(limits)+1)
	rate.Y.Tick.Marker = roundTicks{max(rate.Y.Max/legendRoom(len(limits)+1), 100)}

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
	if s.waited > 0 {
		w, err := waitPlot(s)
		if err != nil {
			return err
		}
		panels = append(panels, []*plot.Plot{w})
	}
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
		row[0].X.Tick.Marker = roundTicks{}
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
		// The fonts go in the file: a viewer that substitutes its own
		// draws wider text than the layout measured, over the legend's
		// samples and past the edge.
		cw = vgsvg.NewWith(vgsvg.UseWH(width, height), vgsvg.EmbedFonts(true))
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

// writeDemoChart draws the demo's chart: the throttled client's run, and
// below it what the demo's table compares, each client's answers over
// time.
func writeDemoChart(chart *chartFile, s *series, client limitSpec, title string, plain, throttled *demoAnswers) error {
	p := plot.New()
	p.Title.Text = "Answers over time: the plain client against the throttled one"
	p.X.Label.Text = "time (s), from each client's start"
	p.Y.Label.Text = "answers so far"
	p.Legend.Top, p.Legend.Left = true, true // samples left of their text, which a substituted font widens
	p.Add(plotter.NewGrid())
	end := 0.0
	for _, a := range []*demoAnswers{plain, throttled} {
		if n := len(a.at); n > 0 {
			end = max(end, secs(a.at[n-1]))
		}
	}
	top := 0.0
	for _, c := range []struct {
		name   string
		a      *demoAnswers
		dashes []vg.Length
	}{{"plain client", plain, []vg.Length{vg.Points(5), vg.Points(3)}}, {"throttled client", throttled, nil}} {
		for _, o := range []struct {
			ok    bool
			what  string
			color color.RGBA
		}{{true, "successes", acceptColor}, {false, "429s", rejectColor}} {
			pts := c.a.cumulative(o.ok)
			pts = append(pts, point{end, pts[len(pts)-1].y}) // held to the end
			top = max(top, pts[len(pts)-1].y)
			l, err := plotter.NewLine(xys(pts))
			if err != nil {
				return err
			}
			l.Color, l.Width, l.Dashes = o.color, vg.Points(1.5), c.dashes
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s: %s (%d)", c.name, o.what, int(pts[len(pts)-1].y)), l)
		}
	}
	p.Y.Min, p.Y.Max = 0, max(top, 1)*legendRoom(4)
	p.Y.Tick.Marker = roundTicks{max(top, 1)}
	return writeChart(chart, s, []limitSpec{client}, title, chartKeys{}, p)
}

// waitPlot draws, in wait mode, how long the requests waited: the longest
// wait of each time bin, at its grant.
func waitPlot(s *series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Waits: %d requests waited, the longest %v (longest of each time bin, at its grant)", s.waited, s.wait.Round(time.Millisecond))
	p.X.Label.Text = "time (s)"
	unit, scale := "s", 1.0
	if s.wait < time.Second {
		unit, scale = "ms", 1000
	}
	p.Y.Label.Text = "wait (" + unit + ")"
	p.Legend.Top, p.Legend.Left = true, true // samples left of their text, which a substituted font widens
	p.Add(plotter.NewGrid())
	pts := s.waits()
	for i := range pts {
		pts[i].y *= scale
	}
	// A stem from 0 to each wait, and the wait on top: the eye finds the
	// tall ones.
	for _, q := range pts {
		stem, err := plotter.NewLine(plotter.XYs{{X: q.x, Y: 0}, {X: q.x, Y: q.y}})
		if err != nil {
			return nil, err
		}
		stem.Color, stem.Width = waitColor, vg.Points(1)
		p.Add(stem)
	}
	sc, err := plotter.NewScatter(xys(pts))
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: waitColor, Radius: vg.Points(2.5), Shape: draw.TriangleGlyph{}}
	p.Add(sc)
	addEntry(p, "longest wait of the bin", len(pts), sc)
	top := s.wait.Seconds() * scale
	p.Y.Min, p.Y.Max = 0, top*legendRoom(1)
	p.Y.Tick.Marker = roundTicks{top}
	return p, nil
}

// thickCross is draw.CrossGlyph with a line width of its own.
type thickCross struct{ width vg.Length }

func (g thickCross) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: g.width})
	r := sty.Radius * 0.7
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	c.Stroke(p)
	p = vg.Path{}
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	c.Stroke(p)
}
