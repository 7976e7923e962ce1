// Package otelthrottle reports the decisions of throttle buckets as
// OpenTelemetry metrics. It lives in its own package so that programs that
// do not use OpenTelemetry do not link it.
//
// An Observer records, per limit (the bucket's name, in the attribute
// throttle.limit):
//
//	throttle.granted    counter    {request}  grants, by TryAcquire or Acquire
//	throttle.rejected   counter    {request}  refusals by TryAcquire, and Acquire calls that failed fast on their deadline
//	throttle.cancelled  counter    {request}  waiters whose context ended before their grant
//	throttle.paused     counter    {pause}    PauseUntil calls that started or extended a pause
//	throttle.settled    counter    {permit}   permits settled
//	throttle.wait       histogram  s          the wait of each grant, zero for grants that did not queue
//	throttle.level      gauge      {token}    the level of each watched bucket, negative while in debt
//
// The counters and the histogram are fed by the events of the buckets
// created with throttle.WithObserver(o); the gauge reads the Level of
// Bucket.Status at each collection for the buckets passed to Watch. The two are separate
// because a bucket takes its observer when it is created, after the
// Observer exists.
//
// Limit names become attribute values, so they should be few: name the
// limits of a provider ("requests", "tokens"), not one per API key.
package otelthrottle

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/throttlekit/throttle"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// LimitKey is the attribute that carries the bucket's name, as given with
// throttle.WithName.
const LimitKey = attribute.Key("throttle.limit")

// WaitBuckets are the explicit bucket boundaries, in seconds, advised for
// the throttle.wait histogram: a first bucket that holds only the grants
// that did not wait, then waits from milliseconds to the minutes a daily or
// per-minute quota can impose. An SDK View can replace them.
var WaitBuckets = []float64{0, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// maxCachedLimits bounds the per-name cache of measurement options, so that
// a program that names buckets after unbounded keys does not grow it
// forever; names past the bound are still recorded, at the cost of an
// allocation per event.
const maxCachedLimits = 1024

// Observer is a throttle.Observer that records OpenTelemetry metrics. It is
// safe for concurrent use and may be shared by any number of buckets.
type Observer struct {
	granted   metric.Int64Counter
	rejected  metric.Int64Counter
	cancelled metric.Int64Counter
	paused    metric.Int64Counter
	settled   metric.Int64Counter
	threshold metric.Int64Counter
	wait      metric.Float64Histogram
	level     metric.Float64ObservableGauge
	reg       metric.Registration

	mu      sync.Mutex
	watched []*throttle.Bucket

	opts   sync.Map // limit name -> *limitOpts
	cached atomic.Int32
}

var _ throttle.Observer = (*Observer)(nil)

// limitOpts are the measurement options for one limit name, built once so
// that recording an event allocates nothing.
type limitOpts struct {
	add     []metric.AddOption
	record  []metric.RecordOption
	observe []metric.ObserveOption
}

// New creates the Observer's instruments on meter and registers the
// callback of the level gauge. Call Close to unregister it.
func New(meter metric.Meter) (*Observer, error) {
	o := &Observer{}
	counters := []struct {
		c          *metric.Int64Counter
		name, unit string
		desc       string
	}{
		{&o.granted, "throttle.granted", "{request}", "Acquisitions granted."},
		{&o.rejected, "throttle.rejected", "{request}", "Acquisitions refused by TryAcquire or failed fast on their deadline."},
		{&o.cancelled, "throttle.cancelled", "{request}", "Queued acquisitions whose context ended before their grant."},
		{&o.paused, "throttle.paused", "{pause}", "Pauses started or extended by PauseUntil."},
		{&o.settled, "throttle.settled", "{permit}", "Permits settled."},
		{&o.threshold, "throttle.threshold", "{alert}", "Budget thresholds reached (package budget's EventThreshold)."},
	}
	var err error
	for _, c := range counters {
		*c.c, err = meter.Int64Counter(c.name, metric.WithUnit(c.unit), metric.WithDescription(c.desc))
		if err != nil {
			return nil, fmt.Errorf("otelthrottle: %s: %w", c.name, err)
		}
	}
	o.wait, err = meter.Float64Histogram("throttle.wait",
		metric.WithUnit("s"),
		metric.WithDescription("Time each granted acquisition waited."),
		metric.WithExplicitBucketBoundaries(WaitBuckets...))
	if err != nil {
		return nil, fmt.Errorf("otelthrottle: throttle.wait: %w", err)
	}
	o.level, err = meter.Float64ObservableGauge("throttle.level",
		metric.WithUnit("{token}"),
		metric.WithDescription("Tokens in the bucket, fractions included; negative while in debt."))
	if err != nil {
		return nil, fmt.Errorf("otelthrottle: throttle.level: %w", err)
	}
	o.reg, err = meter.RegisterCallback(o.observeLevels, o.level)
	if err != nil {
		return nil, fmt.Errorf("otelthrottle: throttle.level callback: %w", err)
	}
	return o, nil
}

// Observe records e. It implements throttle.Observer.
func (o *Observer) Observe(e throttle.Event) {
	ctx := context.Background()
	opts := o.optsFor(e.Limit)
	switch e.Kind {
	case throttle.EventGranted:
		o.granted.Add(ctx, 1, opts.add...)
		o.wait.Record(ctx, e.Wait.Seconds(), opts.record...)
	case throttle.EventRejected:
		o.rejected.Add(ctx, 1, opts.add...)
	case throttle.EventCancelled:
		o.cancelled.Add(ctx, 1, opts.add...)
	case throttle.EventPaused:
		o.paused.Add(ctx, 1, opts.add...)
	case throttle.EventSettled:
		o.settled.Add(ctx, 1, opts.add...)
	case throttle.EventThreshold:
		o.threshold.Add(ctx, 1, opts.add...)
	}
}

// Watch adds buckets to those whose level the throttle.level gauge reports.
// A bucket already watched is not added twice. Buckets with the same name
// report under the same attribute, so give watched buckets distinct names.
func (o *Observer) Watch(buckets ...*throttle.Bucket) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, b := range buckets {
		if b != nil && !slices.Contains(o.watched, b) {
			o.watched = append(o.watched, b)
		}
	}
}

// Unwatch removes buckets from the gauge, so that the Observer no longer
// holds them.
func (o *Observer) Unwatch(buckets ...*throttle.Bucket) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.watched = slices.DeleteFunc(o.watched, func(b *throttle.Bucket) bool {
		return slices.Contains(buckets, b)
	})
}

// Close unregisters the gauge's callback: no level is reported after it.
// The counters and the histogram keep recording events.
func (o *Observer) Close() error {
	return o.reg.Unregister()
}

// observeLevels is the gauge's callback. It reads the levels outside o.mu:
// Tokens takes the bucket's lock, and Watch must not wait on a collection.
func (o *Observer) observeLevels(_ context.Context, obs metric.Observer) error {
	o.mu.Lock()
	watched := slices.Clone(o.watched)
	o.mu.Unlock()
	for _, b := range watched {
		st := b.Status()
		obs.ObserveFloat64(o.level, st.Level, o.optsFor(st.Name).observe...)
	}
	return nil
}

// optsFor returns the measurement options for a limit name, cached while
// fewer than maxCachedLimits names have been seen.
func (o *Observer) optsFor(name string) *limitOpts {
	if v, ok := o.opts.Load(name); ok {
		return v.(*limitOpts)
	}
	m := metric.WithAttributeSet(attribute.NewSet(LimitKey.String(name)))
	lo := &limitOpts{
		add:     []metric.AddOption{m},
		record:  []metric.RecordOption{m},
		observe: []metric.ObserveOption{m},
	}
	if o.cached.Load() < maxCachedLimits {
		if v, loaded := o.opts.LoadOrStore(name, lo); loaded {
			return v.(*limitOpts)
		}
		o.cached.Add(1)
	}
	return lo
}
