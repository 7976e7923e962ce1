package pool

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Quarantine takes the member named name out of the Pool until until: no
// call goes to it before then. A later end extends a quarantine, an
// earlier one changes nothing. It is for a quota exhausted beyond what a
// pause should wait out: a billing refusal, a quota for the day, a
// Retry-After past any wait a caller would accept. It fails only for a
// name that is no member's.
func (p *Pool) Quarantine(name string, until time.Time) error {
	m := p.byName[name]
	if m == nil {
		return fmt.Errorf("pool: Quarantine: no member named %q", name)
	}
	p.mu.Lock()
	if until.After(m.until) {
		m.until = until
	}
	p.mu.Unlock()
	return nil
}

// Quarantined returns the end of the named member's quarantine, zero if
// it is not quarantined now.
func (p *Pool) Quarantined(name string) time.Time {
	m := p.byName[name]
	if m == nil {
		return time.Time{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !m.until.After(p.clock.Now()) {
		return time.Time{}
	}
	return m.until
}

// firstBack returns the earliest end of a quarantine in force at now.
func (p *Pool) firstBack(now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first time.Time
	for _, m := range p.members {
		if m.until.After(now) && (first.IsZero() || m.until.Before(first)) {
			first = m.until
		}
	}
	return first
}

// awaitQuarantine waits, every member being quarantined at now, for the
// first to come back, or fails at once if that is past ctx's deadline.
func (p *Pool) awaitQuarantine(ctx context.Context, now time.Time) error {
	back := p.firstBack(now)
	if back.IsZero() {
		return nil // one came back meanwhile
	}
	if d, ok := ctx.Deadline(); ok && back.After(d) {
		return p.unavailable(now, nil, context.DeadlineExceeded)
	}
	t := p.clock.NewTimer(back.Sub(now))
	defer t.Stop()
	select {
	case <-t.Chan():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Unavailable is a member that cannot serve a call before its deadline,
// and from when it could.
type Unavailable struct {
	Name  string
	Until time.Time
	// Quarantined tells a quarantine from a wait on the member's limits
	// or pause.
	Quarantined bool
}

// UnavailableError is the error of a call that no member could serve
// before its deadline. It matches, with errors.Is and errors.As, the
// error of the wait that ended it: a *throttle.WaitError, or
// context.DeadlineExceeded when every member was quarantined.
type UnavailableError struct {
	Members []Unavailable
	Err     error
}

func (e *UnavailableError) Error() string {
	var b strings.Builder
	b.WriteString("pool: no member can serve the call before its deadline:")
	for i, m := range e.Members {
		if i > 0 {
			b.WriteByte(',')
		}
		how := "waits until"
		if m.Quarantined {
			how = "quarantined until"
		}
		fmt.Fprintf(&b, " %q %s %s", m.Name, how, m.Until.Format(time.RFC3339Nano))
	}
	return b.String()
}

// Unwrap returns the error of the wait that ended the call.
func (e *UnavailableError) Unwrap() error { return e.Err }

// unavailable returns the UnavailableError of a call at now: every member,
// quarantined or waiting as cs says, and err.
func (p *Pool) unavailable(now time.Time, cs []choice, err error) error {
	e := &UnavailableError{Err: err}
	p.mu.Lock()
	for _, m := range p.members {
		if m.until.After(now) {
			e.Members = append(e.Members, Unavailable{Name: m.Name, Until: m.until, Quarantined: true})
		}
	}
	p.mu.Unlock()
	for _, c := range cs {
		e.Members = append(e.Members, Unavailable{Name: c.m.Name, Until: now.Add(c.wait)})
	}
	return e
}
