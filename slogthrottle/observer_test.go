package slogthrottle_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/budget"
	"github.com/throttlekit/throttle/slogthrottle"
)

// slogLine is one record captured by slogRecorder.
type slogLine struct {
	level slog.Level
	msg   string
	attrs map[string]slog.Value
}

// slogRecorder is a slog.Handler that keeps every record it is given.
type slogRecorder struct {
	min   slog.Leveler
	mu    sync.Mutex
	lines []slogLine
}

func (h *slogRecorder) Enabled(_ context.Context, l slog.Level) bool {
	return h.min == nil || l >= h.min.Level()
}

func (h *slogRecorder) Handle(_ context.Context, r slog.Record) error {
	line := slogLine{level: r.Level, msg: r.Message, attrs: map[string]slog.Value{}}
	r.Attrs(func(a slog.Attr) bool {
		line.attrs[a.Key] = a.Value
		return true
	})
	h.mu.Lock()
	h.lines = append(h.lines, line)
	h.mu.Unlock()
	return nil
}

func (h *slogRecorder) WithAttrs([]slog.Attr) slog.Handler { panic("not used") }
func (h *slogRecorder) WithGroup(string) slog.Handler      { panic("not used") }

func (h *slogRecorder) take() []slogLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.lines
	h.lines = nil
	return l
}

var slogT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func granted(limit string, wait time.Duration) throttle.Event {
	return throttle.Event{Kind: throttle.EventGranted, Limit: limit, Cost: 1, Wait: wait}
}

// suppressedOf returns the line's suppressed attribute, or 0 without one.
func suppressedOf(t *testing.T, l slogLine) int64 {
	t.Helper()
	v, ok := l.attrs["suppressed"]
	if !ok {
		return 0
	}
	if v.Int64() <= 0 {
		t.Fatalf("suppressed attribute present with value %d", v.Int64())
	}
	return v.Int64()
}

func TestSlogObserverLine(t *testing.T) {
	h := &slogRecorder{}
	o := slogthrottle.New(slog.New(h), time.Second, slogthrottle.WithClock(clockwork.NewFakeClockAt(slogT0)))
	o.Observe(throttle.Event{Kind: throttle.EventGranted, Limit: "tokens", Cost: 4000, Wait: 1200 * time.Millisecond})
	lines := h.take()
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1", len(lines))
	}
	l := lines[0]
	if want := "waited 1.2s for 'tokens' due to client-side throttling"; l.msg != want {
		t.Errorf("message %q, want %q", l.msg, want)
	}
	if l.level != slog.LevelInfo {
		t.Errorf("level %v, want INFO", l.level)
	}
	if got := l.attrs["limit"].String(); got != "tokens" {
		t.Errorf("limit attribute %q", got)
	}
	if got := l.attrs["wait"].Duration(); got != 1200*time.Millisecond {
		t.Errorf("wait attribute %v", got)
	}
	if got := l.attrs["cost"].Int64(); got != 4000 {
		t.Errorf("cost attribute %d", got)
	}
	if _, ok := l.attrs["suppressed"]; ok {
		t.Errorf("suppressed attribute on the first line")
	}
	if len(l.attrs) != 3 {
		t.Errorf("attributes %v, want limit, wait, cost", l.attrs)
	}
}

// TestSlogObserverBudgetThreshold: a budget's threshold is logged at WARN
// (or the observer's level if higher), whatever the interval and the wait
// threshold, with what was spent of what and until when.
func TestSlogObserverBudgetThreshold(t *testing.T) {
	h := &slogRecorder{}
	clk := clockwork.NewFakeClockAt(slogT0)
	o := slogthrottle.New(slog.New(h), time.Hour, slogthrottle.WithClock(clk))
	o.Observe(granted("tokens", 2*time.Second)) // takes the interval
	day, err := budget.New("day", 100, budget.Daily(time.UTC), budget.WithClock(clk), budget.WithObserver(o))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := day.For("tenant-a").Acquire(context.Background(), 85); err != nil {
		t.Fatal(err)
	}
	lines := h.take()
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want the wait and the threshold", len(lines))
	}
	l := lines[1]
	if want := "budget 'day/tenant-a' reached 80%: 85 of 100 spent, until 2026-01-02T00:00:00Z"; l.msg != want {
		t.Errorf("message %q, want %q", l.msg, want)
	}
	if l.level != slog.LevelWarn || l.attrs["threshold"].Float64() != 0.8 || l.attrs["spent"].Int64() != 85 || l.attrs["budget"].Int64() != 100 {
		t.Errorf("line %+v", l)
	}
	o2 := slogthrottle.New(slog.New(h), 0, slogthrottle.WithLevel(slog.LevelError))
	o2.Observe(throttle.Event{Kind: throttle.EventThreshold, Limit: "day", Threshold: 1, Cost: 100, Estimate: 100})
	if lines := h.take(); len(lines) != 1 || lines[0].level != slog.LevelError {
		t.Errorf("at an ERROR observer: %+v", lines)
	}
}

func TestSlogObserverMessage(t *testing.T) {
	for _, c := range []struct {
		limit string
		wait  time.Duration
		want  string
	}{
		{"tokens", 1234567891, "waited 1.235s for 'tokens' due to client-side throttling"},
		{"requests", 90 * time.Second, "waited 1m30s for 'requests' due to client-side throttling"},
		{"", 2 * time.Second, "waited 2s due to client-side throttling"},
		{"x", 1500 * time.Microsecond, "waited 2ms for 'x' due to client-side throttling"},
		{"x", 999 * time.Microsecond, "waited 999µs for 'x' due to client-side throttling"},
	} {
		h := &slogRecorder{}
		o := slogthrottle.New(slog.New(h), 0, slogthrottle.WithThreshold(0))
		o.Observe(granted(c.limit, c.wait))
		lines := h.take()
		if len(lines) != 1 || lines[0].msg != c.want {
			t.Errorf("limit %q wait %v: got %+v, want %q", c.limit, c.wait, lines, c.want)
		}
		if len(lines) == 1 && lines[0].attrs["wait"].Duration() != c.wait {
			t.Errorf("wait attribute %v rounded, want %v", lines[0].attrs["wait"].Duration(), c.wait)
		}
	}
}

func TestSlogObserverThreshold(t *testing.T) {
	h := &slogRecorder{}
	o := slogthrottle.New(slog.New(h), 0)
	for _, e := range []throttle.Event{
		granted("a", 0),
		granted("a", time.Second), // not above the default threshold
		{Kind: throttle.EventRejected, Limit: "a", Cost: 1, Wait: time.Hour},
		{Kind: throttle.EventCancelled, Limit: "a", Cost: 1, Wait: time.Hour},
		{Kind: throttle.EventPaused, Limit: "a", Until: slogT0.Add(time.Hour)},
		{Kind: throttle.EventSettled, Limit: "a", Cost: 3},
	} {
		o.Observe(e)
	}
	if lines := h.take(); len(lines) != 0 {
		t.Fatalf("logged %+v; want nothing", lines)
	}
	o.Observe(granted("a", time.Second+1))
	if lines := h.take(); len(lines) != 1 {
		t.Fatalf("a wait of 1s+1ns logged %d lines, want 1", len(lines))
	}

	o = slogthrottle.New(slog.New(h), 0, slogthrottle.WithThreshold(50*time.Millisecond))
	o.Observe(granted("a", 50*time.Millisecond))
	o.Observe(granted("a", 50*time.Millisecond+1))
	if lines := h.take(); len(lines) != 1 || lines[0].attrs["wait"].Duration() != 50*time.Millisecond+1 {
		t.Fatalf("threshold 50ms: got %+v, want only the 50ms+1ns wait", lines)
	}

	o = slogthrottle.New(slog.New(h), 0, slogthrottle.WithThreshold(-1))
	o.Observe(granted("a", 0))
	o.Observe(throttle.Event{Kind: throttle.EventRejected, Limit: "a", Cost: 1})
	if lines := h.take(); len(lines) != 1 {
		t.Fatalf("negative threshold: got %d lines for one zero-wait grant, want 1", len(lines))
	}
}

// TestSlogObserverInterval checks that lines are at least the interval
// apart on the observer's clock, and that each reports the waits dropped
// since the previous one.
func TestSlogObserverInterval(t *testing.T) {
	clk := clockwork.NewFakeClockAt(slogT0)
	h := &slogRecorder{}
	o := slogthrottle.New(slog.New(h), time.Second, slogthrottle.WithClock(clk))
	// At each offset from the start, one qualifying wait; want is the
	// suppressed count of the line it logs, or -1 if it logs none.
	steps := []struct {
		at   time.Duration
		want int64
	}{
		{0, 0},
		{0, -1},
		{500 * time.Millisecond, -1},
		{time.Second - 1, -1},
		{time.Second, 3},
		{1500 * time.Millisecond, -1},
		{2*time.Second - 1, -1},
		{3 * time.Second, 2},
		{10 * time.Second, 0},
		{11*time.Second - 1, -1},
		{11 * time.Second, 1},
	}
	for i, s := range steps {
		clk.Advance(slogT0.Add(s.at).Sub(clk.Now()))
		o.Observe(granted("tokens", 2*time.Second))
		lines := h.take()
		switch {
		case s.want < 0 && len(lines) != 0:
			t.Errorf("step %d at %v: logged %+v, want nothing", i, s.at, lines)
		case s.want >= 0 && len(lines) != 1:
			t.Errorf("step %d at %v: logged %d lines, want 1", i, s.at, len(lines))
		case s.want >= 0 && suppressedOf(t, lines[0]) != s.want:
			t.Errorf("step %d at %v: suppressed %d, want %d", i, s.at, suppressedOf(t, lines[0]), s.want)
		}
	}
}

// TestSlogObserverSharedInterval checks that the interval is shared by all
// the limits the observer sees, and that waits below the threshold neither
// use the interval nor count as suppressed.
func TestSlogObserverSharedInterval(t *testing.T) {
	clk := clockwork.NewFakeClockAt(slogT0)
	h := &slogRecorder{}
	o := slogthrottle.New(slog.New(h), time.Minute, slogthrottle.WithClock(clk))
	o.Observe(granted("requests", 10*time.Millisecond))
	o.Observe(granted("requests", 5*time.Second))
	o.Observe(granted("tokens", 7*time.Second))
	o.Observe(granted("tokens", 10*time.Millisecond))
	clk.Advance(time.Minute)
	o.Observe(granted("tokens", 3*time.Second))
	lines := h.take()
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2", len(lines))
	}
	if lines[0].attrs["limit"].String() != "requests" || suppressedOf(t, lines[0]) != 0 {
		t.Errorf("first line %+v, want requests with nothing suppressed", lines[0])
	}
	if lines[1].attrs["limit"].String() != "tokens" || suppressedOf(t, lines[1]) != 1 {
		t.Errorf("second line %+v, want tokens with 1 suppressed", lines[1])
	}
}

func TestSlogObserverEveryZeroLogsAll(t *testing.T) {
	h := &slogRecorder{}
	o := slogthrottle.New(slog.New(h), 0, slogthrottle.WithClock(clockwork.NewFakeClockAt(slogT0)))
	for range 5 {
		o.Observe(granted("tokens", 2*time.Second))
	}
	lines := h.take()
	if len(lines) != 5 {
		t.Fatalf("every=0 logged %d of 5 waits", len(lines))
	}
	for _, l := range lines {
		if suppressedOf(t, l) != 0 {
			t.Errorf("every=0 reported suppressed lines: %+v", l)
		}
	}
}

// TestSlogObserverLevel checks that waits the logger is not enabled for
// are neither logged nor counted, and that a LevelVar takes effect at once.
func TestSlogObserverLevel(t *testing.T) {
	clk := clockwork.NewFakeClockAt(slogT0)
	h := &slogRecorder{min: slog.LevelWarn}
	var lv slog.LevelVar // INFO
	o := slogthrottle.New(slog.New(h), time.Second, slogthrottle.WithClock(clk), slogthrottle.WithLevel(&lv))
	o.Observe(granted("tokens", 2*time.Second))
	o.Observe(granted("tokens", 2*time.Second))
	if lines := h.take(); len(lines) != 0 {
		t.Fatalf("logged %+v below the handler's level", lines)
	}
	lv.Set(slog.LevelWarn)
	o.Observe(granted("tokens", 2*time.Second))
	lines := h.take()
	if len(lines) != 1 || lines[0].level != slog.LevelWarn || suppressedOf(t, lines[0]) != 0 {
		t.Fatalf("got %+v, want one WARN line with nothing suppressed", lines)
	}
}

// TestSlogObserverConcurrent checks that under concurrent waits every
// qualifying wait is logged or counted exactly once.
func TestSlogObserverConcurrent(t *testing.T) {
	clk := clockwork.NewFakeClockAt(slogT0)
	h := &slogRecorder{}
	o := slogthrottle.New(slog.New(h), time.Second, slogthrottle.WithClock(clk))
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				o.Observe(granted("tokens", 2*time.Second))
			}
		})
	}
	wg.Wait()
	lines := h.take()
	if len(lines) != 1 {
		t.Fatalf("%d lines in one interval, want 1", len(lines))
	}
	// The first line is the interval's first wait: none was dropped
	// before it, though thousands were while it was being written.
	if s := suppressedOf(t, lines[0]); s != 0 {
		t.Fatalf("the first line says %d waits were suppressed before it", s)
	}
	clk.Advance(time.Second)
	o.Observe(granted("tokens", 2*time.Second))
	lines = h.take()
	if len(lines) != 1 {
		t.Fatalf("%d lines after the interval, want 1", len(lines))
	}
	if got, want := suppressedOf(t, lines[0]), int64(goroutines*each-1); got != want {
		t.Fatalf("suppressed %d, want %d", got, want)
	}
}

// TestSlogObserverBucket drives the observer from a bucket: a grant that
// queued for two seconds of fake time is logged with that exact wait, and
// a grant that did not wait is not.
func TestSlogObserverBucket(t *testing.T) {
	ctx := context.Background()
	clk := clockwork.NewFakeClockAt(slogT0)
	h := &slogRecorder{}
	o := slogthrottle.New(slog.New(h), time.Minute, slogthrottle.WithClock(clk))
	b, err := throttle.New(1, throttle.Per(1, 2*time.Second),
		throttle.WithName("tokens"), throttle.WithClock(clk), throttle.WithObserver(o))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Acquire(ctx, 1) }()
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := h.take()
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want 1", len(lines))
	}
	if want := "waited 2s for 'tokens' due to client-side throttling"; lines[0].msg != want {
		t.Errorf("message %q, want %q", lines[0].msg, want)
	}
	if got := lines[0].attrs["wait"].Duration(); got != 2*time.Second {
		t.Errorf("wait attribute %v, want 2s", got)
	}
}
