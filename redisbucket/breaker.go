package redisbucket

import (
	"strconv"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// breakerState is where a breaker stands.
type breakerState uint8

const (
	// breakerClosed: every decision calls Redis.
	breakerClosed breakerState = iota
	// breakerOpen: decisions go to the failure policy until the next probe
	// is due.
	breakerOpen
	// breakerProbing: one call, the probe, is in flight; decisions still go
	// to the failure policy.
	breakerProbing
)

// String names the state, for test failures.
func (s breakerState) String() string {
	switch s {
	case breakerClosed:
		return "closed"
	case breakerOpen:
		return "open"
	case breakerProbing:
		return "probing"
	}
	return "breakerState(" + strconv.Itoa(int(s)) + ")"
}

// breaker keeps calls away from a Redis that just failed. Closed, every
// decision calls Redis. The first failure opens it: decisions go to the
// failure policy, and once the backoff has passed one call probes Redis
// (probing); a probe that succeeds closes it, one that fails opens it
// again with the next probe a longer gap away. Times come from the
// injected clock.
type breaker struct {
	mu    sync.Mutex
	state breakerState
	next  time.Time // open or probing: when the next probe is due
	cause error     // open or probing: the error that opened it
	bo    *backoff.ExponentialBackOff
}

func newBreaker(min, max time.Duration) *breaker {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = min
	bo.MaxInterval = max
	bo.MaxElapsedTime = 0 // probe forever
	bo.RandomizationFactor = 0.2
	bo.Multiplier = 2
	bo.Reset()
	return &breaker{bo: bo}
}

// The transitions, each with b.mu held.

// openLocked: closed to open on a failure, the first probe one initial
// backoff away.
func (b *breaker) openLocked(now time.Time, err error) {
	b.bo.Reset()
	b.state, b.cause = breakerOpen, err
	b.next = now.Add(b.bo.NextBackOff())
}

// probeLocked: open to probing, the probe's call about to leave.
func (b *breaker) probeLocked() { b.state = breakerProbing }

// probeFailedLocked: probing to open, the next probe a longer gap away.
func (b *breaker) probeFailedLocked(now time.Time, err error) {
	b.state, b.cause = breakerOpen, err
	b.next = now.Add(b.bo.NextBackOff())
}

// probeAbandonedLocked: probing to open, the next probe due at once.
func (b *breaker) probeAbandonedLocked() { b.state = breakerOpen }

// closeLocked: open or probing to closed.
func (b *breaker) closeLocked() {
	b.state, b.cause = breakerClosed, nil
	b.bo.Reset()
}

// allow reports whether this decision may call Redis and whether that call
// is the probe of an open breaker; when it may not, it returns the error
// that opened the breaker.
func (b *breaker) allow(now time.Time) (call, probe bool, cause error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.state == breakerClosed:
		return true, false, nil
	case b.state == breakerProbing || now.Before(b.next):
		return false, false, b.cause
	}
	b.probeLocked()
	return true, true, nil
}

// success closes the breaker; it reports whether it was open.
func (b *breaker) success() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == breakerClosed {
		return false
	}
	b.closeLocked()
	return true
}

// failure opens the breaker, or after a failed probe schedules the next one
// a longer gap away; a call that was already in flight when the breaker
// opened changes nothing. It reports whether the breaker was closed.
func (b *breaker) failure(now time.Time, err error, probe bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.state == breakerClosed:
		b.openLocked(now, err)
		return true
	case probe:
		b.probeFailedLocked(now, err)
	}
	return false
}

// abandon ends a call that neither succeeded nor failed: the caller's
// context ended first. If it was the probe, the breaker may probe again at
// once; without this a probe cut short by its caller would leave the
// breaker probing forever, never calling Redis again.
func (b *breaker) abandon(probe bool) {
	if !probe {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == breakerProbing {
		b.probeAbandonedLocked()
	}
}

// probeNow lets the next decision probe at once, when something suggests
// Redis is back (a cluster's slot moved to a live node).
func (b *breaker) probeNow(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == breakerOpen && now.Before(b.next) {
		b.next = now
	}
}

// openUntil returns when the next probe is due, or the zero time if closed.
func (b *breaker) openUntil() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == breakerClosed {
		return time.Time{}
	}
	return b.next
}
