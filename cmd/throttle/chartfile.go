package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
