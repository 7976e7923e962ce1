package redisbucket

import (
	"sync"
	"time"
)

// pauses is the latest end of a pause (mode d) that a reply reported, and
// the latest lowering of a rate this process told Redis of (Tune), with a
// channel closed when either changes: a sleeper whose reservation was made
// before hears of them without a call of its own.
type pauses struct {
	mu    sync.Mutex
	until int64 // server µs
	ch    chan struct{}
	// gen counts slowdowns; the latest multiplies the waits that remain at
	// local time at by factor.
	gen    int64
	factor float64
	at     time.Time
}

// saw records a reply's pause end (0 for none).
func (p *pauses) saw(until int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if until <= p.until {
		return
	}
	p.until = until
	p.wake()
}

// slowed records that a rate fell by factor (above 1) at local time at.
func (p *pauses) slowed(factor float64, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	p.factor, p.at = factor, at
	p.wake()
}

func (p *pauses) wake() {
	if p.ch != nil {
		close(p.ch)
		p.ch = nil
	}
}

// get returns the latest pause end, the slowdowns so far, and a channel
// closed when either changes.
func (p *pauses) get() (until, gen int64, factor float64, at time.Time, changed <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch == nil {
		p.ch = make(chan struct{})
	}
	return p.until, p.gen, p.factor, p.at, p.ch
}
