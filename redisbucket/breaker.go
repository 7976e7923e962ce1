package redisbucket

import (
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// breaker keeps calls away from a Redis that just failed. Closed, every
// decision calls Redis. The first failure opens it: decisions go to the
// failure policy, and one call at a time probes Redis once the backoff has
// passed; a probe that succeeds closes it, one that fails schedules the next
// probe after a longer gap. Times come from the injected clock.
type breaker struct {
	mu      sync.Mutex
	open    bool
	probing bool
	next    time.Time
	cause   error
	bo      *backoff.ExponentialBackOff
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

// allow reports whether this decision may call Redis and whether that call
// is the probe of an open breaker; when it may not, it returns the error
// that opened the breaker.
func (b *breaker) allow(now time.Time) (call, probe bool, cause error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return true, false, nil
	}
	if b.probing || now.Before(b.next) {
		return false, false, b.cause
	}
	b.probing = true
	return true, true, nil
}

// success closes the breaker; it reports whether it was open.
func (b *breaker) success() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	was := b.open
	if was {
		b.open, b.probing, b.cause = false, false, nil
		b.bo.Reset()
	}
	return was
}

// failure opens the breaker, or after a failed probe schedules the next one
// a longer gap away; a call that was already in flight when the breaker
// opened changes nothing. It reports whether the breaker was closed.
func (b *breaker) failure(now time.Time, err error, probe bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case !b.open:
		b.bo.Reset()
		b.open, b.cause = true, err
		b.next = now.Add(b.bo.NextBackOff())
		return true
	case probe:
		b.probing, b.cause = false, err
		b.next = now.Add(b.bo.NextBackOff())
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
	b.probing = false
}

// probeNow lets the next decision probe at once, when something suggests
// Redis is back (a cluster's slot moved to a live node).
func (b *breaker) probeNow(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open && !b.probing && now.Before(b.next) {
		b.next = now
	}
}

// openUntil returns when the next probe is due, or the zero time if closed.
func (b *breaker) openUntil() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return time.Time{}
	}
	return b.next
}
