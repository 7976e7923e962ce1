package otelthrottle_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/budget"
	"github.com/throttlekit/throttle/otelthrottle"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// setup returns an Observer on a fresh SDK meter provider, and the manual
// reader that collects its metrics.
func setup(t *testing.T) (*otelthrottle.Observer, *sdkmetric.ManualReader) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() {
		if err := mp.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	o, err := otelthrottle.New(mp.Meter("test"))
	if err != nil {
		t.Fatal(err)
	}
	return o, r
}

// collect returns the metrics of one collection by name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	ms := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			ms[m.Name] = m
		}
	}
	return ms
}

func limit(name string) attribute.Set {
	return attribute.NewSet(otelthrottle.LimitKey.String(name))
}

func point(name string, v int64) metricdata.DataPoint[int64] {
	return metricdata.DataPoint[int64]{Attributes: limit(name), Value: v}
}

func counter(name, unit, desc string, pts ...metricdata.DataPoint[int64]) metricdata.Metrics {
	return metricdata.Metrics{
		Name: name, Unit: unit, Description: desc,
		Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality,
			IsMonotonic: true,
			DataPoints:  pts,
		},
	}
}

// waits returns the histogram point of the given waits, in seconds.
func waits(name string, ws ...float64) metricdata.HistogramDataPoint[float64] {
	p := metricdata.HistogramDataPoint[float64]{
		Attributes:   limit(name),
		Count:        uint64(len(ws)),
		Bounds:       otelthrottle.WaitBuckets,
		BucketCounts: make([]uint64, len(otelthrottle.WaitBuckets)+1),
		Min:          metricdata.NewExtrema(ws[0]),
		Max:          metricdata.NewExtrema(ws[0]),
	}
	for _, w := range ws {
		p.Sum += w
		i := 0
		for i < len(p.Bounds) && w > p.Bounds[i] {
			i++
		}
		p.BucketCounts[i]++
		if lo, _ := p.Min.Value(); w < lo {
			p.Min = metricdata.NewExtrema(w)
		}
		if hi, _ := p.Max.Value(); w > hi {
			p.Max = metricdata.NewExtrema(w)
		}
	}
	return p
}

func gauge(pts ...metricdata.DataPoint[float64]) metricdata.Metrics {
	return metricdata.Metrics{
		Name: "throttle.level", Unit: "{token}",
		Description: "Tokens in the bucket, fractions included; negative while in debt.",
		Data:        metricdata.Gauge[float64]{DataPoints: pts},
	}
}

func level(name string, v float64) metricdata.DataPoint[float64] {
	return metricdata.DataPoint[float64]{Attributes: limit(name), Value: v}
}

func newBucket(t *testing.T, clk clockwork.Clock, o throttle.Observer, name string, capacity int64, r throttle.Rate) *throttle.Bucket {
	t.Helper()
	b, err := throttle.New(capacity, r, throttle.WithName(name), throttle.WithClock(clk), throttle.WithObserver(o))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	descGranted   = "Acquisitions granted."
	descRejected  = "Acquisitions refused by TryAcquire or failed fast on their deadline."
	descCancelled = "Queued acquisitions whose context ended before their grant."
	descPaused    = "Pauses started or extended by PauseUntil."
	descSettled   = "Permits settled."
	descThreshold = "Budget thresholds reached (package budget's EventThreshold)."
)

var opts = []metricdatatest.Option{metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars()}

// TestObserverMetrics drives two buckets through every kind of event on a
// fake clock and checks the exact value of every metric.
func TestObserverMetrics(t *testing.T) {
	ctx := context.Background()
	o, r := setup(t)
	clk := clockwork.NewFakeClockAt(t0)
	req := newBucket(t, clk, o, "requests", 2, throttle.Per(1, time.Second))
	tok := newBucket(t, clk, o, "tokens", 100, throttle.Per(10, time.Second))
	o.Watch(req, tok)

	// requests: two grants without waiting, then a refusal.
	for i, want := range []bool{true, true, false} {
		if ok, err := req.TryAcquire(1); err != nil || ok != want {
			t.Fatalf("TryAcquire %d = %v, %v; want %v", i, ok, err, want)
		}
	}
	// A grant after queueing for exactly one second.
	done := make(chan error, 1)
	go func() { done <- req.Acquire(ctx, 1) }()
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A waiter cancelled while queued.
	cctx, cancel := context.WithCancel(ctx)
	go func() { done <- req.Acquire(cctx, 1) }()
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire: %v", err)
	}
	// A deadline too short fails fast: a second refusal.
	dctx, dcancel := clockwork.WithTimeout(ctx, clk, 100*time.Millisecond)
	err := req.Acquire(dctx, 1)
	dcancel()
	var we *throttle.WaitError
	if !errors.As(err, &we) || we.Wait != time.Second {
		t.Fatalf("Acquire past the deadline: %v, want a WaitError of 1s", err)
	}
	// A pause, and a repeat that does not extend it.
	pauseBucket(req, clk.Now().Add(5*time.Second))
	pauseBucket(req, clk.Now().Add(time.Second))

	// tokens: estimate 40, settle at 25.
	tl, err := throttle.NewLimiter(tok)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tl.Acquire(ctx, 40)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(25); err != nil {
		t.Fatal(err)
	}

	// A budget of 100 a day spent to 90: its 80% threshold.
	day, err := budget.New("day", 100, budget.Daily(time.UTC), budget.WithClock(clk), budget.WithObserver(o))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := day.Acquire(ctx, 90); err != nil {
		t.Fatal(err)
	}

	ms := collect(t, r)
	for _, want := range []metricdata.Metrics{
		counter("throttle.granted", "{request}", descGranted, point("requests", 3), point("tokens", 1)),
		counter("throttle.rejected", "{request}", descRejected, point("requests", 2)),
		counter("throttle.cancelled", "{request}", descCancelled, point("requests", 1)),
		counter("throttle.paused", "{pause}", descPaused, point("requests", 1)),
		counter("throttle.settled", "{permit}", descSettled, point("tokens", 1)),
		counter("throttle.threshold", "{alert}", descThreshold, point("day", 1)),
		{
			Name: "throttle.wait", Unit: "s", Description: "Time each granted acquisition waited.",
			Data: metricdata.Histogram[float64]{
				Temporality: metricdata.CumulativeTemporality,
				DataPoints:  []metricdata.HistogramDataPoint[float64]{waits("requests", 0, 0, 1), waits("tokens", 0)},
			},
		},
		// requests spent its refill on the queued grant; tokens holds
		// 100 - 40 + 15.
		gauge(level("requests", 0), level("tokens", 75)),
	} {
		got, ok := ms[want.Name]
		if !ok {
			t.Errorf("metric %s not collected", want.Name)
			continue
		}
		metricdatatest.AssertEqual(t, want, got, opts...)
	}
	if len(ms) != 8 {
		t.Errorf("collected %d metrics, want 8", len(ms))
	}

	// The pause ends 5s after it started; half a second later requests
	// holds half a token, and tokens has refilled to capacity.
	clk.Advance(5500 * time.Millisecond)
	metricdatatest.AssertEqual(t, gauge(level("requests", 0.5), level("tokens", 100)), collect(t, r)["throttle.level"], opts...)
}

// TestObserverDebt checks that the gauge reports a level below zero.
func TestObserverDebt(t *testing.T) {
	o, r := setup(t)
	clk := clockwork.NewFakeClockAt(t0)
	b := newBucket(t, clk, o, "tokens", 10, throttle.Per(4, time.Second))
	o.Watch(b)
	if err := charge(b, 19); err != nil { // 9 in debt, of at most 10
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	metricdatatest.AssertEqual(t, gauge(level("tokens", -5)), collect(t, r)["throttle.level"], opts...)
	clk.Advance(time.Second / 8)
	metricdatatest.AssertEqual(t, gauge(level("tokens", -4.5)), collect(t, r)["throttle.level"], opts...)
}

// TestObserverLimiter checks that a Limiter's acquisition counts once per
// bucket it spends on, and not for a bucket it leaves out with a zero cost.
func TestObserverLimiter(t *testing.T) {
	o, r := setup(t)
	clk := clockwork.NewFakeClockAt(t0)
	req := newBucket(t, clk, o, "requests", 5, throttle.Per(5, time.Minute))
	tok := newBucket(t, clk, o, "tokens", 1000, throttle.Per(1000, time.Minute))
	l, err := throttle.NewLimiter(req, tok)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]int64{{1, 600}, {1, 600}, {0, 300}} {
		if _, err := l.TryAcquire(c...); err != nil {
			t.Fatal(err)
		}
	}
	ms := collect(t, r)
	metricdatatest.AssertEqual(t,
		counter("throttle.granted", "{request}", descGranted, point("requests", 1), point("tokens", 2)),
		ms["throttle.granted"], opts...)
	metricdatatest.AssertEqual(t,
		counter("throttle.rejected", "{request}", descRejected, point("requests", 1), point("tokens", 1)),
		ms["throttle.rejected"], opts...)
}

// TestObserverWatch checks Watch, Unwatch and Close.
func TestObserverWatch(t *testing.T) {
	o, r := setup(t)
	clk := clockwork.NewFakeClockAt(t0)
	a := newBucket(t, clk, nil, "a", 3, throttle.Per(1, time.Second))
	b := newBucket(t, clk, nil, "b", 7, throttle.Per(1, time.Second))
	if _, ok := collect(t, r)["throttle.level"]; ok {
		t.Errorf("a gauge with no watched bucket was collected")
	}
	o.Watch(a, b, a, nil)
	o.Watch(b)
	metricdatatest.AssertEqual(t, gauge(level("a", 3), level("b", 7)), collect(t, r)["throttle.level"], opts...)
	o.Unwatch(a)
	metricdatatest.AssertEqual(t, gauge(level("b", 7)), collect(t, r)["throttle.level"], opts...)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if m, ok := collect(t, r)["throttle.level"]; ok {
		t.Errorf("gauge collected after Close: %+v", m)
	}
	// Events are still recorded after Close.
	o.Observe(throttle.Event{Kind: throttle.EventGranted, Limit: "a", Cost: 1})
	metricdatatest.AssertEqual(t, counter("throttle.granted", "{request}", descGranted, point("a", 1)),
		collect(t, r)["throttle.granted"], opts...)
}

// TestObserverManyLimits checks that names past the cache's bound are
// recorded like the others.
func TestObserverManyLimits(t *testing.T) {
	o, r := setup(t)
	const n = 1500
	for i := range n {
		for range i%3 + 1 {
			o.Observe(throttle.Event{Kind: throttle.EventCancelled, Limit: fmt.Sprintf("limit-%d", i), Cost: 1})
		}
	}
	// Compared by hand: metricdatatest matches points pairwise, which
	// takes seconds for this many.
	sum, ok := collect(t, r)["throttle.cancelled"].Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatal("throttle.cancelled is not a Sum[int64]")
	}
	got := map[string]int64{}
	for _, p := range sum.DataPoints {
		v, _ := p.Attributes.Value(otelthrottle.LimitKey)
		if p.Attributes.Len() != 1 {
			t.Errorf("point with attributes %v", p.Attributes.ToSlice())
		}
		got[v.AsString()] += p.Value
	}
	if len(got) != n {
		t.Errorf("%d limits recorded, want %d", len(got), n)
	}
	for i := range n {
		if name := fmt.Sprintf("limit-%d", i); got[name] != int64(i%3+1) {
			t.Errorf("%s: %d, want %d", name, got[name], i%3+1)
		}
	}
}
