package throttle

import (
	"context"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
)

// DefaultSlogThreshold is the wait a grant must exceed before a
// SlogObserver logs it. It is the threshold above which Kubernetes clients
// log their client-side throttling at the default verbosity.
const DefaultSlogThreshold = time.Second

// SlogObserver is an Observer that logs long waits to a *slog.Logger, one
// line in the style of kubectl's client-side throttling message:
//
//	waited 1.2s for 'tokens' due to client-side throttling
//
// It logs only EventGranted events whose Wait exceeds a threshold
// (DefaultSlogThreshold unless SlogThreshold says otherwise), and at most
// one line per interval across every limit it observes, so that a program
// stuck behind a limit does not flood its log. Each line carries the
// attributes limit, wait and cost, and, when earlier qualifying waits were
// dropped by the interval, suppressed: how many were dropped since the
// previous line. Every qualifying wait is thus either logged or counted in
// a later line; a count still pending when waits stop is never reported,
// since the observer owns no goroutine or timer.
//
// The interval is measured on the clock given with SlogClock (the real
// clock by default), which should be the clock of the buckets observed.
// While the logger is not enabled at the observer's level, waits are
// neither logged nor counted.
//
// A SlogObserver is safe for concurrent use and never blocks beyond the
// logger's handler; it may be shared by any number of buckets.
type SlogObserver struct {
	logger    *slog.Logger
	level     slog.Leveler
	threshold time.Duration
	every     int64 // nanoseconds; <= 0 logs every qualifying wait
	clock     clockwork.Clock
	epoch     time.Time

	next       atomic.Int64 // earliest instant, since epoch, of the next line
	suppressed atomic.Int64 // qualifying waits dropped since the last line
}

// SlogOption configures a SlogObserver.
type SlogOption func(*SlogObserver)

// SlogThreshold makes the observer log only grants whose wait is strictly
// longer than d. SlogThreshold(0) logs every grant that waited at all; a
// negative d logs every grant, including those that did not wait.
func SlogThreshold(d time.Duration) SlogOption {
	return func(o *SlogObserver) { o.threshold = d }
}

// SlogLevel sets the level of the observer's lines; the default is
// slog.LevelInfo. A *slog.LevelVar changes it while the program runs.
func SlogLevel(l slog.Leveler) SlogOption {
	return func(o *SlogObserver) { o.level = l }
}

// SlogClock makes the observer measure its interval on c, normally the
// clock given to the observed buckets with WithClock.
func SlogClock(c clockwork.Clock) SlogOption {
	return func(o *SlogObserver) { o.clock = c }
}

// NewSlogObserver returns a SlogObserver that writes to logger, or to
// slog.Default() as it is at this call when logger is nil, at most one line
// per every. An every of zero or less logs every qualifying wait.
func NewSlogObserver(logger *slog.Logger, every time.Duration, opts ...SlogOption) *SlogObserver {
	if logger == nil {
		logger = slog.Default()
	}
	o := &SlogObserver{
		logger:    logger,
		level:     slog.LevelInfo,
		threshold: DefaultSlogThreshold,
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
	o.next.Store(math.MinInt64)
	return o
}

// Observe logs e if it is a grant that waited longer than the threshold and
// the interval since the last line has passed, and counts it as suppressed
// if the interval has not.
func (o *SlogObserver) Observe(e Event) {
	if e.Kind != EventGranted || e.Wait <= o.threshold {
		return
	}
	ctx := context.Background()
	level := o.level.Level()
	if !o.logger.Enabled(ctx, level) {
		return
	}
	if o.every > 0 {
		now := int64(o.clock.Since(o.epoch))
		next := o.next.Load()
		// Losing the race to a concurrent wait in the same interval counts
		// as being inside the interval: that wait's line is the one logged.
		if now < next || !o.next.CompareAndSwap(next, addSat(now, uint64(o.every))) {
			o.suppressed.Add(1)
			return
		}
	}
	attrs := [4]slog.Attr{
		slog.String("limit", e.Limit),
		slog.Duration("wait", e.Wait),
		slog.Int64("cost", e.Cost),
	}
	n := 3
	if s := o.suppressed.Swap(0); s > 0 {
		attrs[n] = slog.Int64("suppressed", s)
		n++
	}
	o.logger.LogAttrs(ctx, level, waitMessage(e.Limit, e.Wait), attrs[:n]...)
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
