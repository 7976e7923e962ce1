package throttle_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/testwait"
)

// whyLog keeps the events it hears, explanations by value.
type whyLog struct {
	mu     sync.Mutex
	events []throttle.Event
	whys   []throttle.WaitError
}

func (r *whyLog) Observe(e throttle.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var w throttle.WaitError
	if e.Why != nil {
		w = *e.Why
	}
	r.events, r.whys = append(r.events, e), append(r.whys, w)
}

func (r *whyLog) take() ([]throttle.Event, []throttle.WaitError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, w := r.events, r.whys
	r.events, r.whys = nil, nil
	return e, w
}

// twoLimits is a Limiter of 10 requests and 100 tokens a second, observed.
func twoLimits(t *testing.T, clk clockwork.Clock, rec throttle.Observer) *throttle.Limiter {
	t.Helper()
	req, err := throttle.New(10, throttle.Per(10, time.Second), throttle.WithClock(clk), throttle.WithName("requests"), throttle.WithObserver(rec))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := throttle.New(100, throttle.Per(100, time.Second), throttle.WithClock(clk), throttle.WithName("tokens"), throttle.WithObserver(rec))
	if err != nil {
		t.Fatal(err)
	}
	l, err := throttle.NewLimiter(req, tok)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestExplainBeforeTheCall checks that Explain gives what WaitTime gives,
// with the binding limit and the calls ahead, and moves nothing: the
// levels, the queue and a second answer are as before.
func TestExplainBeforeTheCall(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := &whyLog{}
	l := twoLimits(t, clk, rec)
	if ok, _ := l.TryAcquire(10, 50); !ok {
		t.Fatal("refused a full limiter")
	}
	before := l.Status(nil)
	why, err := l.Explain(1, 100)
	if err != nil {
		t.Fatal(err)
	}
	// requests needs 100ms, tokens 500ms: tokens binds.
	want := throttle.WaitError{Wait: 500 * time.Millisecond, Limit: "tokens"}
	if why != want {
		t.Fatalf("Explain = %+v, want %+v", why, want)
	}
	if again, _ := l.Explain(1, 100); again != why {
		t.Fatalf("second Explain = %+v, first %+v", again, why)
	}
	if after := l.Status(nil); after[0] != before[0] || after[1] != before[1] {
		t.Fatalf("Explain moved the state: %+v, was %+v", after, before)
	}
	if now, _ := l.Explain(0, 1); now.Wait != 0 {
		t.Fatalf("Explain of a cost there now = %+v, want no wait", now)
	}

	// A call queued: the next is behind it, and Status counts it.
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(context.Background(), 1, 100)
		done <- err
	}()
	testwait.Queued(t, func() int { return throttle.QueuedFor(l) }, 0, nil)
	clk.Advance(100 * time.Millisecond)
	why, _ = l.Explain(1, 1)
	wt, _ := l.WaitTime(1, 1)
	if why.Ahead != 1 || why.Limit != "tokens" || why.Wait != wt {
		t.Fatalf("Explain behind a waiter = %+v, want 1 ahead on tokens, wait %v", why, wt)
	}
	st := l.Status(nil)
	if st[0].Waiting != 1 || st[0].Oldest != 100*time.Millisecond {
		t.Fatalf("Status with a waiter queued 100ms: %+v", st[0])
	}
	rec.take()
	clk.Advance(400 * time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	events, whys := rec.take()
	if len(events) != 2 {
		t.Fatalf("events %+v", events)
	}
	for i, e := range events {
		w := throttle.WaitError{Wait: 500 * time.Millisecond, Limit: "tokens"}
		if e.Kind != throttle.EventGranted || whys[i] != w {
			t.Errorf("event %+v explained %+v, want a grant explained %+v", e, whys[i], w)
		}
	}
	if st := l.Status(nil); st[0].Waiting != 0 || st[0].Oldest != 0 {
		t.Fatalf("Status with nobody queued: %+v", st[0])
	}
}

// TestRefusalExplained checks that a refused TryAcquire and an Acquire
// that fails fast on its deadline name the binding limit in their events,
// and the error is the same explanation.
func TestRefusalExplained(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := &whyLog{}
	l := twoLimits(t, clk, rec)
	l.TryAcquire(10, 50)
	rec.take()
	if ok, _ := l.TryAcquire(2, 1); ok {
		t.Fatal("granted")
	}
	_, whys := rec.take()
	want := throttle.WaitError{Wait: 200 * time.Millisecond, Limit: "requests"}
	if len(whys) != 2 || whys[0] != want || whys[1] != want {
		t.Fatalf("refusal explained %+v, want %+v on both limits", whys, want)
	}

	ctx, cancel := clockwork.WithTimeout(t.Context(), clk, 100*time.Millisecond)
	defer cancel()
	_, err := l.Acquire(ctx, 1, 100)
	var we *throttle.WaitError
	if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want a *WaitError matching DeadlineExceeded", err)
	}
	want = throttle.WaitError{Wait: 500 * time.Millisecond, Limit: "tokens"}
	if *we != want {
		t.Fatalf("WaitError %+v, want %+v", *we, want)
	}
	if _, whys := rec.take(); len(whys) != 2 || whys[0] != want {
		t.Fatalf("fail-fast explained %+v, want %+v", whys, want)
	}
}

// TestPauseCause checks that a pause's cause, told through Observe before
// PauseUntil, is carried by the pause's event, Status, Explain and the
// WaitError of a call it holds past its deadline; that a later pause with
// no cause drops it; and that a cause told while its pause is in force is
// recorded and passed on.
func TestPauseCause(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := &whyLog{}
	l := twoLimits(t, clk, rec)
	until := clk.Now().Add(2 * time.Second)
	const cause = "429 from api.example.com: Retry-After 2s"
	l.Observe(throttle.Event{Kind: throttle.EventPaused, Limit: "requests", Until: until, Reason: cause})
	if events, _ := rec.take(); len(events) != 0 {
		t.Fatalf("a cause told ahead was reported before its pause: %+v", events)
	}
	l.PauseUntil(until)
	events, _ := rec.take()
	if len(events) != 2 || events[0].Reason != cause || events[1].Reason != "" {
		t.Fatalf("pause events %+v, want the cause on requests only", events)
	}
	if st := l.Status(nil); !st[0].Paused.Equal(until) || st[0].Cause != cause || st[1].Cause != "" {
		t.Fatalf("Status %+v", st)
	}
	why, _ := l.Explain(1, 1)
	if why.Limit != "requests" || !why.Paused.Equal(until) || why.Cause != cause || why.Wait != 2*time.Second {
		t.Fatalf("Explain under a pause = %+v", why)
	}
	ctx, cancel := clockwork.WithTimeout(t.Context(), clk, time.Second)
	defer cancel()
	_, err := l.Acquire(ctx, 1, 1)
	var we *throttle.WaitError
	if !errors.As(err, &we) || we.Cause != cause || !strings.Contains(err.Error(), cause) {
		t.Fatalf("err %v, want a WaitError naming the cause", err)
	}

	// A later pause of no known cause is not the server's any more.
	l.PauseUntil(until.Add(time.Second))
	if st := l.Status(nil); st[0].Cause != "" {
		t.Fatalf("a later pause kept the cause %q", st[0].Cause)
	}
	// Told while its pause is in force, the cause is recorded and heard.
	rec.take()
	l.Observe(throttle.Event{Kind: throttle.EventPaused, Limit: "requests", Until: until.Add(time.Second), Reason: "503 from x: Retry-After 3s"})
	if events, _ := rec.take(); len(events) != 1 || events[0].Reason != "503 from x: Retry-After 3s" {
		t.Fatalf("events %+v", events)
	}
	if st := l.Status(nil); st[0].Cause != "503 from x: Retry-After 3s" {
		t.Fatalf("cause told late: Status %+v", st[0])
	}
	// Once the pause ends, Status has none and no cause.
	clk.Advance(3 * time.Second)
	if st := l.Status(nil); !st[0].Paused.IsZero() || st[0].Cause != "" {
		t.Fatalf("after the pause: %+v", st[0])
	}
}
