package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// chartFile is where --chart writes, in the format its name asks for.
type chartFile struct {
	path   string
	format string // "png", "svg" or "pdf"
	f      *os.File
	done   bool // written, or failed while writing
}

// chartFormats are the extensions --chart accepts and what they name.
var chartFormats = map[string]string{".png": "PNG", ".svg": "SVG", ".pdf": "PDF"}

// createChart checks that path names a format the chart can be written in
// and creates the file, before a run, so that a bad name or path fails at
// once rather than after a long trace.
func createChart(path string) (*chartFile, error) {
	ext := strings.ToLower(filepath.Ext(path))
	if _, ok := chartFormats[ext]; !ok {
		return nil, usagef("--chart %q: the name must end in .png, .svg or .pdf, the format to write", path)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, usagef("--chart: %v", err)
	}
	return &chartFile{path: path, format: ext[1:], f: f}, nil
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

// discard deletes the file unless it was written: for a run that failed
// before its chart. It does nothing on a nil chartFile.
func (c *chartFile) discard() {
	if c == nil || c.done {
		return
	}
	c.f.Close()
	os.Remove(c.path)
}

// report says where the chart went.
func (c *chartFile) report(w io.Writer) {
	fmt.Fprintf(w, "\nchart: %s (%s)\n", c.path, chartFormats["."+c.format])
}
