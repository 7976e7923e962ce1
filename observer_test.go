package throttle

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// recorder keeps the events it hears, each without its explanation, which
// it keeps apart in whys (at the same index), so that events compare with
// ==; explain_test.go checks the explanations.
type recorder struct {
	mu     sync.Mutex
	events []Event
	whys   []*WaitError
}

func (r *recorder) Observe(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.whys = append(r.whys, e.Why)
	e.Why = nil
	r.events = append(r.events, e)
}

func (r *recorder) take() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.events
	r.events, r.whys = nil, nil
	return e
}

func TestObserverEvents(t *testing.T) {
	rec := &recorder{}
	clk := newClock()
	b, _ := New(10, Per(10, time.Second), WithClock(clk), WithName("tokens"), WithObserver(rec))

	b.TryAcquire(8)
	b.TryAcquire(5) // 2 left: 3 more take 300ms
	p, _ := b.AcquirePermit(t.Context(), 2)
	p.Settle(1)
	p2, _ := b.AcquirePermit(t.Context(), 1)
	p2.Cancel()
	want := []Event{
		{Kind: EventGranted, Limit: "tokens", Cost: 8},
		{Kind: EventRejected, Limit: "tokens", Cost: 5, Wait: 300 * time.Millisecond},
		{Kind: EventGranted, Limit: "tokens", Cost: 2},
		{Kind: EventSettled, Limit: "tokens", Cost: 1, Estimate: 2},
		{Kind: EventGranted, Limit: "tokens", Cost: 1},
		{Kind: EventSettled, Limit: "tokens", Cost: 0, Estimate: 1},
	}
	got := rec.take()
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: got %+v, want %+v", i, got[i], want[i])
		}
	}

	// A waiter cancelled after queueing 250ms reports that time.
	b.TryAcquire(1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.Acquire(ctx, 10) }()
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(250 * time.Millisecond)
	cancel()
	<-done
	ev := rec.take()
	if last := ev[len(ev)-1]; last.Kind != EventCancelled || last.Wait != 250*time.Millisecond {
		t.Fatalf("got %+v, want a cancellation after 250ms", last)
	}
	// A context that is already done reports a cancellation too.
	b.Acquire(ctx, 1)
	if ev := rec.take(); len(ev) != 1 || ev[0].Kind != EventCancelled {
		t.Fatalf("got %+v", ev)
	}
}

func TestObserverBadCostsOnDoneContext(t *testing.T) {
	rec := &recorder{}
	a, _ := New(1, Per(1, time.Second), WithObserver(rec))
	b, _ := New(1, Per(1, time.Second), WithObserver(rec))
	l, _ := NewLimiter(a, b)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := l.Acquire(ctx, 1); !errors.Is(err, ErrInvalidCost) {
		t.Fatalf("Acquire = %v, want ErrInvalidCost", err)
	}
}

func TestObservers(t *testing.T) {
	r1, r2 := &recorder{}, &recorder{}
	b, _ := New(1, Per(1, time.Second), WithObserver(r1, r2))
	b.TryAcquire(1)
	if len(r1.take()) != 1 || len(r2.take()) != 1 {
		t.Fatal("an event did not reach every observer")
	}
}

// TestKeyedLimiterObserved checks that a Limiter handed out by a Keyed
// reports to the Keyed's observer, like one made with NewLimiter: for
// TryAcquire, and for Acquire granted at once.
func TestKeyedLimiterObserved(t *testing.T) {
	rec := &recorder{}
	k := NewKeyed(func(string) []Limit {
		return []Limit{{Name: "req", Capacity: 2, Rate: Per(1, time.Second)}}
	}, WithObserver(rec))
	l := k.Limiter("a")
	if ok, err := l.TryAcquire(1); !ok || err != nil {
		t.Fatalf("TryAcquire = %v, %v", ok, err)
	}
	if _, err := l.Acquire(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	want := Event{Kind: EventGranted, Limit: "req", Cost: 1}
	if got := rec.take(); len(got) != 2 || got[0] != want || got[1] != want {
		t.Fatalf("events %+v, want two of %+v", got, want)
	}
}
