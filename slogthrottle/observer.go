// Package slogthrottle logs a limiter's long waits with log/slog: an
// Observer (see throttle.WithObserver) that writes one line in the style
// of kubectl's client-side throttling message, at most one per interval.
package slogthrottle

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// DefaultThreshold is the wait a grant must exceed before a
// Observer logs it. It is the threshold above which Kubernetes clients
// log their client-side throttling at the default verbosity.
const DefaultThreshold = time.Second

// Observer is a throttle.Observer that logs long waits to a *slog.Logger, one
// line in the style of kubectl's client-side throttling message:
//
//	waited 1.2s for 'tokens' due to client-side throttling
//
// It logs only throttle.EventGranted events whose Wait exceeds a threshold
// (DefaultThreshold unless WithThreshold says otherwise), and at most
// one line per interval across every limit it observes, so that a program
// stuck behind a limit does not flood its log. Each line carries the
// attributes limit, wait and cost, and, when earlier qualifying waits were
// dropped by the interval, suppressed: how many were dropped since the
// previous line. Every qualifying wait is thus either logged or counted in
// a later line; a count still pending when waits stop is never reported,
// since the observer owns no goroutine or timer.
//
// The interval is measured on the clock given with WithClock (the real
// clock by default), which should be the clock of the buckets observed.
// While the logger is not enabled at the observer's level, waits are
// neither logged nor counted.
//
// A Observer is safe for concurrent use and never blocks beyond the
// logger's handler; it may be shared by any number of buckets.
type Observer struct {
	logger    *slog.Logger
	level     slog.Leveler
	threshold time.Duration
	every     int64 // nanoseconds; <= 0 logs every qualifying wait
	clock     clockwork.Clock
	epoch     time.Time

	// mu makes choosing a wait for the interval's line and taking the
	// count of those dropped before it one step: apart, a wait dropped
	// between them was reported by the line written before it.
	mu         sync.Mutex
	next       int64 // earliest instant, since epoch, of the next line
	suppressed int64 // qualifying waits dropped since the last line
}

// Option configures an Observer.
type Option func(*Observer)

// WithThreshold makes the observer log only grants whose wait is strictly
// longer than d. WithThreshold(0) logs every grant that waited at all; a
// negative d logs every grant, including those that did not wait.
func WithThreshold(d time.Duration) Option {
	return func(o *Observer) { o.threshold = d }
}

// WithLevel sets the level of the observer's lines; the default is
// slog.LevelInfo. A *slog.LevelVar changes it while the program runs.
func WithLevel(l slog.Leveler) Option {
	return func(o *Observer) { o.level = l }
}

// WithClock makes the observer measure its interval on c, normally the
// clock given to the observed buckets with WithClock.
func WithClock(c clockwork.Clock) Option {
	return func(o *Observer) { o.clock = c }
}

// New returns an Observer that writes to logger, or to
// slog.Default() as it is at this call when logger is nil, at most one line
// per every. An every of zero or less logs every qualifying wait.
func New(logger *slog.Logger, every time.Duration, opts ...Option) *Observer {
	if logger == nil {
		logger = slog.Default()
	}
	o := &Observer{
		logger:    logger,
		level:     slog.LevelInfo,
		threshold: DefaultThreshold,
		every:     int64(every),
	}
	for _, opt := range opts {
		opt(o)
	}
	if o.clock == nil {
		o.clock = clockwork.NewRealClock()
	}
	if o.level == nil {
		o.level = slog.LevelInfo
	}
	o.epoch = o.clock.Now()
	o.next = math.MinInt64
	return o
}

// Observe logs e if it is a grant that waited longer than the threshold and
// the interval since the last line has passed, and counts it as suppressed
// if the interval has not.
//
// An EventThreshold (a budget's spend reaching a fraction of its limit; see
// package budget) is logged whenever it comes, at slog.LevelWarn or the
// observer's level if higher: a budget tells each fraction once a window,
// so there are few, and each is news an operator should not miss.
func (o *Observer) Observe(e throttle.Event) {
	if e.Kind == throttle.EventThreshold {
		o.thresholdLine(e)
		return
	}
	if e.Kind != throttle.EventGranted || e.Wait <= o.threshold {
		return
	}
	ctx := context.Background()
	level := o.level.Level()
	if !o.logger.Enabled(ctx, level) {
		return
	}
	var dropped int64
	if o.every > 0 {
		now := int64(o.clock.Since(o.epoch))
		o.mu.Lock()
		if now < o.next {
			o.suppressed++
			o.mu.Unlock()
			return
		}
		o.next = now + min(o.every, math.MaxInt64-now)
		dropped, o.suppressed = o.suppressed, 0
		o.mu.Unlock()
	}
	attrs := [4]slog.Attr{
		slog.String("limit", e.Limit),
		slog.Duration("wait", e.Wait),
		slog.Int64("cost", e.Cost),
	}
	n := 3
	if dropped > 0 {
		attrs[n] = slog.Int64("suppressed", dropped)
		n++
	}
	o.logger.LogAttrs(ctx, level, waitMessage(e.Limit, e.Wait), attrs[:n]...)
}

// thresholdLine logs a budget's threshold e.
func (o *Observer) thresholdLine(e throttle.Event) {
	ctx := context.Background()
	level := max(o.level.Level(), slog.LevelWarn)
	if !o.logger.Enabled(ctx, level) {
		return
	}
	msg := fmt.Sprintf("budget '%s' reached %g%%: %d of %d spent, until %s",
		e.Limit, e.Threshold*100, e.Cost, e.Estimate, e.Until.Format(time.RFC3339))
	o.logger.LogAttrs(ctx, level, msg, slog.String("limit", e.Limit), slog.Float64("threshold", e.Threshold),
		slog.Int64("spent", e.Cost), slog.Int64("budget", e.Estimate), slog.Time("resets", e.Until))
}

// waitMessage formats the kubectl-style line. The wait is rounded to the
// millisecond for reading; the wait attribute keeps it exact.
func waitMessage(limit string, wait time.Duration) string {
	if wait >= time.Millisecond {
		wait = wait.Round(time.Millisecond)
	}
	if limit == "" {
		return "waited " + wait.String() + " due to client-side throttling"
	}
	return "waited " + wait.String() + " for '" + limit + "' due to client-side throttling"
}
