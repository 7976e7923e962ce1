package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// progress shows a demo client's run while it goes: requests answered so
// far and 429s so far. On a terminal it rewrites one line ten times a
// second; written elsewhere (a file, a pipe, a test) it prints a plain line
// every second. Either way it ends with a line for the whole run.
type progress struct {
	w     io.Writer
	tty   bool
	name  string
	total int
	// received, if set, counts 429s the client saw but did not return (the
	// throttled transport's retries).
	received func() int64

	done, tooMany atomic.Int64
	stop          chan struct{}
	wg            sync.WaitGroup
}

func startProgress(w io.Writer, name string, total int, received func() int64) *progress {
	p := &progress{w: w, tty: isTerminal(w), name: name, total: total, received: received, stop: make(chan struct{})}
	every := time.Second
	if p.tty {
		every = 100 * time.Millisecond
	}
	p.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.print(false)
			}
		}
	})
	return p
}

// answered counts one response, a 429 or not.
func (p *progress) answered(is429 bool) {
	p.done.Add(1)
	if is429 {
		p.tooMany.Add(1)
	}
}

// finish prints the final line; the caller has every response.
func (p *progress) finish() {
	close(p.stop)
	p.wg.Wait()
	p.print(true)
}

func (p *progress) print(final bool) {
	line := fmt.Sprintf("%s: %d/%d done, %d 429s returned to the caller", p.name, p.done.Load(), p.total, p.tooMany.Load())
	if p.received != nil {
		line += fmt.Sprintf(", %d received and retried", p.received())
	}
	switch {
	case p.tty && final:
		fmt.Fprintf(p.w, "\r\033[K%s\n", line)
	case p.tty:
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	default:
		fmt.Fprintln(p.w, line)
	}
}

// isTerminal reports whether w is a terminal, where a line can be
// rewritten in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
