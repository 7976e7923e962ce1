package redisbucket

import (
	"context"
	"fmt"
	"github.com/throttlekit/throttle"
	"time"
)

// WithServerTime makes the script use f instead of the server's TIME, so
// exact traces can run against a real server.
func WithServerTime(f func() time.Time) Option { return func(o *options) { o.serverTime = f } }

// ScriptSource exposes the script for SCRIPT LOAD checks.
var ScriptSource = scriptSrc

// Queued returns how many Acquire callers wait in line behind the head.
func Queued(b *Bucket) int64 { return int64(b.e.line.queued()) }

// LimiterQueued is Queued for a Limiter.
func LimiterQueued(l *Limiter) int64 { return int64(l.e.line.queued()) }

// SettleRaw runs the settle script for p's id once more, as a retry of a
// settle that timed out after it was applied would, and returns the status.
func SettleRaw(p *Permit, actual ...int64) (int64, error) {
	res, err := p.e.call(context.Background(), "s", p.id, p.costs, actual, 1, p.e.o.permitTTL)
	return res.status, err
}

// AcquireRaw runs the acquire script with a given permit id, as a retry of
// an acquisition that timed out after it was applied would.
func AcquireRaw(l *Limiter, id string, costs ...int64) (int64, error) {
	res, err := l.e.call(context.Background(), "a", id, costs, nil, 1, l.e.o.permitTTL)
	return res.status, err
}

// LeaseReturned returns a channel that receives after each lease expiry
// callback of b has finished returning tokens.
func LeaseReturned(b *Bucket) <-chan struct{} {
	ch := make(chan struct{}, 100)
	b.lease.mu.Lock()
	b.lease.returned = func() { ch <- struct{}{} }
	b.lease.mu.Unlock()
	return ch
}

// BreakerOpen reports whether b's circuit breaker is open.
func BreakerOpen(b *Bucket) bool { return !b.e.br.openUntil().IsZero() }

// LimiterBreakerOpen is BreakerOpen for a Limiter.
func LimiterBreakerOpen(l *Limiter) bool { return !l.e.br.openUntil().IsZero() }

// BreakerSuspect reports whether b's circuit breaker is suspect.
func BreakerSuspect(b *Bucket) bool { return b.e.br.isSuspect() }

// BreakerState describes b's breaker, for test failures.
func BreakerState(b *Bucket) string {
	br := b.e.br
	br.mu.Lock()
	defer br.mu.Unlock()
	return fmt.Sprintf("state=%v next in %v cause=%v", br.state, time.Until(br.next), br.cause)
}

// BreakerCause returns the error that keeps b's breaker open, or nil.
func BreakerCause(b *Bucket) error { return breakerCause(b.e) }

// LimiterBreakerCause is BreakerCause for a Limiter.
func LimiterBreakerCause(l *Limiter) error { return breakerCause(l.e) }

func breakerCause(e *engine) error {
	e.br.mu.Lock()
	defer e.br.mu.Unlock()
	if e.br.state == breakerClosed {
		return nil
	}
	return e.br.cause
}

// FleetCount returns the fleet size b last counted, 0 if none.
func FleetCount(b *Bucket) int64 {
	if b.e.fl == nil {
		return 0
	}
	return b.e.fl.count()
}

// ShapeArgs returns the script's arguments for one limit: capacity, num,
// den and unit.
func ShapeArgs(capacity int64, rate throttle.Rate) ([4]string, error) {
	s, err := newShape("", capacity, rate)
	return s.args, err
}

// BatchWaiting returns how many acquisitions wait for the next batch.
func BatchWaiting(b *Bucket) int64 {
	b.e.batch.mu.Lock()
	defer b.e.batch.mu.Unlock()
	return int64(len(b.e.batch.next))
}

// LimiterBatchWaiting is BatchWaiting for a Limiter.
func LimiterBatchWaiting(l *Limiter) int64 {
	l.e.batch.mu.Lock()
	defer l.e.batch.mu.Unlock()
	return int64(len(l.e.batch.next))
}

// SetBatchGap fixes b's bound on calls in flight: one (the coalescing
// with one call in flight) for d > 0, half the client's pool for d == 0,
// whatever the round trip.
func SetBatchGap(b *Bucket, d time.Duration) {
	b.e.batch.mu.Lock()
	defer b.e.batch.mu.Unlock()
	b.e.batch.spacing, b.e.batch.fixed = d, true
}

// BatchInFlight returns b's calls in flight through the batcher and their
// bound.
func BatchInFlight(b *Bucket) (inflight, bound int) {
	b.e.batch.mu.Lock()
	defer b.e.batch.mu.Unlock()
	return b.e.batch.inflight, b.e.batch.max
}

// TryAcquireAt is TryAcquire (without lease mode) that also returns the
// server time, in µs, at which the script decided; 0 when the failure
// policy decided.
func TryAcquireAt(b *Bucket, cost int64) (bool, int64, error) {
	costs := []int64{cost}
	if err := b.e.check(costs); err != nil {
		return false, 0, err
	}
	d, err := b.e.decide(context.Background(), costs, "")
	if err != nil {
		return false, 0, err
	}
	kind := throttle.EventRejected
	if d.granted {
		kind = throttle.EventGranted
	}
	b.e.count(d, costs, kind, d.wait, nil)
	return d.granted, d.at, nil
}

// BatchBound returns how many calls b's batcher lets be in flight now.
func BatchBound(b *Bucket) int {
	b.e.batch.mu.Lock()
	defer b.e.batch.mu.Unlock()
	return b.e.batch.boundLocked()
}

// TunedShape is the shape Tune stores for a server's limit per window on
// a limit of capacity at rate: capacity, num, den, unit.
func TunedShape(capacity int64, rate throttle.Rate, limit int64, window time.Duration) ([4]int64, bool) {
	s, err := newShape("", capacity, rate)
	if err != nil {
		return [4]int64{}, false
	}
	return tunedShape(s, limit, window)
}

// PauseHeard returns the end of the latest pause l heard of (server µs),
// by a reply or its pause feed.
func PauseHeard(l *Limiter) int64 {
	until, _, _, _, _ := l.e.pz.get()
	return until
}

// SlowHeard returns how many slowdowns (a rate lowered by Tune, in this
// process or heard on its feed) stretched l's reserved sleepers.
func SlowHeard(l *Limiter) int64 {
	_, gen, _, _, _ := l.e.pz.get()
	return gen
}

// PauseCauseHeard returns the cause l knows of the latest pause it heard
// of, "" if none.
func PauseCauseHeard(l *Limiter) string {
	_, cause := l.e.pz.latest()
	return cause
}

// FeedBreaks counts the breaks of b's pause feed.
func FeedBreaks(b *Bucket) uint64 {
	epoch, _ := b.e.feed.token()
	return epoch
}
