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
// WaitError and Status, and the give-backs this process's calls carried,
// which bring those sleepers' instants forward (givebacks.go).
type pauses struct {
	mu    sync.Mutex
	until int64 // server µs
	// from is the server instant the pause's end was moved from, for the
	// latest until (0: not known, as from a reply): the fleet's queue of
	// reservations moves by until - from.
	from int64
	// nextUntil and nextFrom: the feed's word of where a pause not heard
	// yet was stored from (heardFrom).
	nextUntil, nextFrom int64
	cause               string
	ch                  chan struct{}
	// gen counts slowdowns; the latest multiplies the waits that remain at
	// local time at by factor.
	gen    int64
	factor float64
	at     time.Time
	// backs are the latest give-backs this process carried to Redis
	// (givebacks.go), numbered from dropped.
	backs   []back
	dropped int
}

// saw records a pause end heard from a reply or the feed (0 for none),
// with the instant it was stored from if the feed told it first (heardFrom).
func (p *pauses) saw(until int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	from := int64(0)
	if until == p.nextUntil {
		from = p.nextFrom
	}
	p.setLocked(until, from)
}

// sawFrom records a pause end and the server instant it was stored from
// (the storing call's own reply).
func (p *pauses) sawFrom(until, from int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(until, from)
}

// heardFrom records the feed's word of the instant the pause ending at
// until was stored from, which the storing process publishes just before
// the pause's end: it never sets a pause by itself.
func (p *pauses) heardFrom(until, from int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if until > p.until {
		p.nextUntil, p.nextFrom = until, from
		return
	}
	p.setLocked(until, from) // fills in the from of the pause in force only
}

func (p *pauses) setLocked(until, from int64) {
	switch {
	case until > p.until:
		// A pause that extends one in force moved the queue from where
		// that one did (0 if unknown): a sleeper that had not applied
		// it moves by both.
		if from > 0 && from <= p.until {
			from = p.from
		}
		p.until, p.from, p.cause = until, from, ""
		p.wake()
	case until == p.until && p.from == 0:
		// The end was heard first (a reply): a sleeper that has not
		// applied it yet moves by the exact amount.
		p.from = from
	}
}

// fromOf returns the instant the pause ending at until was stored from,
// 0 if it is not the latest or not known.
func (p *pauses) fromOf(until int64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if until != p.until {
		return 0
	}
	return p.from
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

// nudge wakes the sleepers to look again: a settlement left give-backs.
func (p *pauses) nudge() {
	p.mu.Lock()
	defer p.mu.Unlock()
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
