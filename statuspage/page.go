package statuspage

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
)

// Page is an http.Handler that shows the limiters registered with it: an
// HTML page that refreshes itself, and its data as JSON (format=json).
// Make it with New and stop its sampling with Close.
type Page struct {
	clock   clockwork.Clock
	every   time.Duration
	keep    int
	top     int
	refresh time.Duration

	mu   sync.RWMutex
	ents map[string]*entry

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Option configures a Page.
type Option func(*Page) error

// WithClock makes the Page sample and timestamp on c; the default is the
// real clock.
func WithClock(c clockwork.Clock) Option {
	return func(p *Page) error {
		if c == nil {
			return errors.New("statuspage: WithClock(nil): leave it out for the real clock")
		}
		p.clock = c
		return nil
	}
}

// WithHistory keeps samples every every over the last span for the charts
// (the default: one a second over five minutes). The samples of one limit
// take 8 bytes each; a limiter keeps at most maxHistoryBytes of them
// whatever the span asks.
func WithHistory(every, span time.Duration) Option {
	return func(p *Page) error {
		if every <= 0 || span < every {
			return fmt.Errorf("statuspage: WithHistory(%v, %v): the interval must be positive and the span at least one interval", every, span)
		}
		p.every, p.keep = every, int(span/every)
		return nil
	}
}

// WithTop shows the n most active limiters (the default 25); the others
// are found by name.
func WithTop(n int) Option {
	return func(p *Page) error {
		if n <= 0 {
			return fmt.Errorf("statuspage: WithTop(%d): show at least one limiter", n)
		}
		p.top = n
		return nil
	}
}

// WithRefresh sets how often the open page asks for new data (the
// default, a second).
func WithRefresh(d time.Duration) Option {
	return func(p *Page) error {
		if d < 100*time.Millisecond {
			return fmt.Errorf("statuspage: WithRefresh(%v): at least 100ms", d)
		}
		p.refresh = d
		return nil
	}
}

// maxHistoryBytes bounds the chart samples one limiter keeps.
const maxHistoryBytes = 1 << 20

// New returns a Page that samples its limiters until Close.
func New(opts ...Option) (*Page, error) {
	p := &Page{clock: clockwork.NewRealClock(), every: time.Second, keep: 300, top: 25, refresh: time.Second,
		ents: map[string]*entry{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, err
		}
	}
	go p.sample()
	return p, nil
}

// Close stops the sampling. The Page still serves what it holds.
func (p *Page) Close() {
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

// Register shows g under name, replacing what was registered under it. A
// Gate that is no throttle.Meter is shown by its limits alone.
func (p *Page) Register(name string, g throttle.Gate) {
	e := p.entry(name)
	e.setGate(g, p.keep)
}

// RegisterAuto shows the quotas a learns, under name.
func (p *Page) RegisterAuto(name string, a *auto.Limiter) {
	e := p.entry(name)
	e.mu.Lock()
	e.auto = a
	e.mu.Unlock()
}

// Unregister removes name from the page, with its history.
func (p *Page) Unregister(name string) {
	p.mu.Lock()
	delete(p.ents, name)
	p.mu.Unlock()
}

// Observer returns the observer that gives the page the events of the
// limiter registered (or to be registered) under name: pass it to the
// limiter's buckets with throttle.WithObserver. The page keeps the recent
// refusals, cancellations, pauses and settlements, and counts what is
// spent for the chart; without it, spending is estimated from the levels.
func (p *Page) Observer(name string) throttle.Observer {
	return p.entry(name)
}

// entry returns the entry of name, made if new.
func (p *Page) entry(name string) *entry {
	p.mu.RLock()
	e := p.ents[name]
	p.mu.RUnlock()
	if e != nil {
		return e
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e = p.ents[name]; e == nil {
		e = newEntry(name, p.clock)
		p.ents[name] = e
	}
	return e
}

// sample takes a sample of every limiter at every interval until Close.
func (p *Page) sample() {
	defer close(p.done)
	t := p.clock.NewTicker(p.every)
	defer t.Stop()
	var ents []*entry
	var buf []throttle.LimitStatus
	for {
		select {
		case <-p.stop:
			return
		case <-t.Chan():
		}
		ents = p.snapshot(ents[:0])
		now := p.clock.Now()
		for _, e := range ents {
			buf = e.sample(now, p.every, buf[:0])
		}
	}
}

// snapshot appends the registered entries to dst.
func (p *Page) snapshot(dst []*entry) []*entry {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, e := range p.ents {
		dst = append(dst, e)
	}
	return dst
}
