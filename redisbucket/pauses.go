package redisbucket

import (
	"sync"
	"time"
)

// pauses is the latest end of a pause (mode d) that a reply reported, and
// the latest lowering of a rate this process told Redis of (Tune), with a
// channel closed when either changes: a sleeper whose reservation was made
// before hears of them without a call of its own. It keeps the pause's
// cause too, when this process stored it or heard it on the feed, for
// WaitError and Status.
type pauses struct {
	mu    sync.Mutex
	until int64 // server µs
	cause string
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
	p.until, p.cause = until, ""
	p.wake()
}

// told records cause as the cause of the pause ending at until, if that
// is the latest pause heard of: a cause never sets a pause, so a stray or
// late message cannot hold anyone.
func (p *pauses) told(until int64, cause string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if until == p.until && until > 0 {
		p.cause = cause
	}
}

// latest returns the latest pause end heard of (server µs, 0 for none)
// and its cause, "" when unknown.
func (p *pauses) latest() (until int64, cause string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.until, p.cause
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
