package main

import (
	"fmt"
	"time"
)

// maxWindows is how many windows a throughput line keeps, whatever the
// length of the trace.
const maxWindows = 256

// windows sums the tokens a limit spent in consecutive windows of its
// period, the first starting at the first arrival, for the chart's
// throughput line: averaged over the limit's own period, a rate does not
// spike with the width of a drawing bin. When the trace outlasts
// maxWindows periods, windows are merged in pairs and the window doubles,
// which the chart then states.
type windows struct {
	period time.Duration
	width  time.Duration // period × 2^k
	spent  []float64
	n      int // windows in use
}

func newWindows(period time.Duration) windows {
	return windows{period: period, width: period, spent: make([]float64, maxWindows)}
}

// add records tokens spent at offset d from the first arrival.
func (w *windows) add(d time.Duration, tokens float64) {
	j := int(d / w.width)
	for j >= maxWindows {
		for i := range maxWindows / 2 {
			w.spent[i] = w.spent[2*i] + w.spent[2*i+1]
		}
		clear(w.spent[maxWindows/2:])
		w.n = (w.n + 1) / 2
		w.width *= 2
		j = int(d / w.width)
	}
	w.spent[j] += tokens
	w.n = max(w.n, j+1)
}

// label says what one point of the line averages over.
func (w *windows) label() string {
	if w.width == w.period {
		return fmt.Sprintf("per %v window", w.period)
	}
	return fmt.Sprintf("per %v window (%d periods)", w.width, w.width/w.period)
}

// points returns the line as steps: each window's tokens as a percentage
// of perWindow, what the rate adds over a window, held from the window's
// start to its end. The last window is drawn whole, although the trace
// ends inside it: nothing more is spent in it. origin places the windows.
func (w *windows) points(origin time.Duration, perWindow float64) []point {
	var out []point
	if perWindow <= 0 {
		return nil
	}
	for j := range w.n {
		start := origin + time.Duration(j)*w.width
		stop := start + w.width
		v := w.spent[j] / perWindow * 100
		out = append(out, point{secs(start), v}, point{secs(stop), v})
	}
	return out
}
