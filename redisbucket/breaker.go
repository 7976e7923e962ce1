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
	// breakerSuspect: a call timed out; decisions go to the failure
	// policy but for one call at a time, which tries Redis again at once.
	breakerSuspect
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
	case breakerSuspect:
		return "suspect"
	}
	return "breakerState(" + strconv.Itoa(int(s)) + ")"
}

// breaker keeps calls away from a Redis that failed. Closed, every
// decision calls Redis. A call refused outright (a transient error reply,
// a connection the server reset) opens it: decisions go to the failure
// policy, and once the backoff has passed one call probes Redis
// (probing); a probe that succeeds closes it, one that fails opens it
// again with the next probe a longer gap away.
//
// A call that timed out makes it suspect instead: decisions go to the
// failure policy without waiting out a call timeout each, but one call at
// a time still tries Redis, at once and again after each failure, and the
// first that succeeds closes it. Only when calls have kept failing for
// the breaker's patience does it open and back off. A server slow for a
// moment (a fleet's processes starting together on few cores hold calls
// past the call timeout) then costs the fleet its Redis only for that
// moment, where opening at the first timeout kept every process away for
// a backoff; a dead or frozen server fails every try and opens it once
// the patience has passed. Times come from the injected clock.
type breaker struct {
	mu       sync.Mutex
	state    breakerState
	next     time.Time // open or probing: when the next probe is due
	cause    error     // open, probing or suspect: the error that began it
	bo       *backoff.ExponentialBackOff
	patience time.Duration
	failing  time.Time // suspect: when the first call timed out
	trying   bool      // suspect: a try is in flight
	// tried closes when the try in flight ends (made on demand by
	// tryEnds): the decisions that wait for it wake then, not on a
	// timer of their own each.
	tried chan struct{}
}

func newBreaker(min, max, patience time.Duration) *breaker {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval = min
	bo.MaxInterval = max
	bo.MaxElapsedTime = 0 // probe forever
	bo.RandomizationFactor = 0.2
	bo.Multiplier = 2
	bo.Reset()
	return &breaker{bo: bo, patience: patience}
}

// The transitions, each with b.mu held.

// openLocked: closed or suspect to open on a failure, the first probe one
// initial backoff away.
func (b *breaker) openLocked(now time.Time, err error) {
	b.bo.Reset()
	b.state, b.cause = breakerOpen, err
	b.endTryLocked()
	b.next = now.Add(b.bo.NextBackOff())
}

// endTryLocked ends the suspect breaker's try in flight, if any, and
// wakes the decisions waiting for it.
func (b *breaker) endTryLocked() {
	b.trying = false
	if b.tried != nil {
		close(b.tried)
		b.tried = nil
	}
}

// suspectLocked: closed to suspect on a timeout.
func (b *breaker) suspectLocked(now time.Time, err error) {
	b.state, b.cause, b.failing, b.trying = breakerSuspect, err, now, false
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

// closeLocked: open, probing or suspect to closed.
func (b *breaker) closeLocked() {
	b.state, b.cause = breakerClosed, nil
	b.endTryLocked()
	b.bo.Reset()
}

// allow reports whether this decision may call Redis and whether that call
// is the probe (or the try) of a breaker that is not closed; when it may
// not, it returns the error that keeps it from Redis.
func (b *breaker) allow(now time.Time) (call, probe bool, cause error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.state == breakerClosed:
		return true, false, nil
	case b.state == breakerSuspect:
		if b.trying {
			return false, false, b.cause
		}
		b.trying = true
		return true, true, nil
	case b.state == breakerProbing || now.Before(b.next):
		return false, false, b.cause
	}
	b.probeLocked()
	return true, true, nil
}

// success closes the breaker; it reports whether it was open (suspect
// included).
func (b *breaker) success() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == breakerClosed {
		return false
	}
	b.closeLocked()
	return true
}

// A failure's effect on the breaker.
const (
	failNone      = iota // nothing changed: a call from before, or still suspect
	failSuspect          // closed to suspect: the failure policy decides
	failOpened           // closed to open
	failEscalated        // suspect to open: the failure policy decided already
)

// failure records a failed call: slow is a timeout. Closed, a timeout
// makes it suspect and any other failure opens it; a suspect breaker's
// failed try opens it once it has been suspect for the patience (a
// failure other than a timeout at once), and otherwise lets the next
// decision try again; a failed probe schedules the next one a longer gap
// away. A call that was already in flight when the state changed changes
// nothing.
func (b *breaker) failure(now time.Time, err error, probe, slow bool) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.state == breakerClosed && slow && b.patience > 0:
		b.suspectLocked(now, err)
		return failSuspect
	case b.state == breakerClosed:
		b.openLocked(now, err)
		return failOpened
	case b.state == breakerSuspect && probe:
		if slow && now.Sub(b.failing) < b.patience {
			b.endTryLocked()
			return failNone
		}
		b.openLocked(now, err)
		return failEscalated
	case b.state == breakerProbing && probe:
		b.probeFailedLocked(now, err)
	}
	return failNone
}

// open opens a closed breaker at once, whatever its patience: the
// constructor's check found Redis unavailable (WithStartWithoutRedis).
func (b *breaker) open(now time.Time, err error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != breakerClosed {
		return false
	}
	b.openLocked(now, err)
	return true
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
	switch b.state {
	case breakerProbing:
		b.probeAbandonedLocked()
	case breakerSuspect:
		b.endTryLocked()
	}
}

// tryEnds returns a channel that closes when the suspect breaker's try in
// flight ends, or nil when none is in flight. While calls time out, a
// decision the failure policy makes wait for Redis waits for that try's
// outcome: a wait of its own for a fixed step would wake every waiter of
// the process (every reserved one, not only the head of a queue) again
// and again through the try, and on few cores shared by a fleet starting
// together those wakings lengthened the very contention that held the
// calls past their timeout.
func (b *breaker) tryEnds() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != breakerSuspect || !b.trying {
		return nil
	}
	if b.tried == nil {
		b.tried = make(chan struct{})
	}
	return b.tried
}

// isSuspect reports whether the breaker is suspect: calls timed out, and
// Redis is being tried again.
func (b *breaker) isSuspect() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == breakerSuspect
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

// openUntil returns when the next probe is due (for a suspect breaker,
// when it became suspect: the next try is due at once), or the zero time
// if closed.
func (b *breaker) openUntil() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case breakerClosed:
		return time.Time{}
	case breakerSuspect:
		return b.failing
	}
	return b.next
}
