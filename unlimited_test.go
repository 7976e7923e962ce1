package throttle

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestInfNeverLimits(t *testing.T) {
	clk := newClock()
	b, err := New(1, Inf, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if b.Rate() != Inf || Inf.String() != "Inf" {
		t.Fatalf("Rate() = %v", b.Rate())
	}
	for range 100 { // all at one instant, above capacity too
		if ok, err := b.TryAcquire(1000); !ok || err != nil {
			t.Fatalf("TryAcquire on Inf = %v, %v", ok, err)
		}
	}
	if err := b.Acquire(t.Context(), 1<<40); err != nil {
		t.Fatal(err)
	}
	if d, err := b.WaitTime(1 << 50); d != 0 || err != nil {
		t.Fatalf("WaitTime = %v, %v", d, err)
	}
	// A zero capacity does not close an Inf bucket.
	z, _ := New(0, Inf, WithClock(clk))
	if ok, err := z.TryAcquire(5); !ok || err != nil {
		t.Fatalf("Inf with capacity 0: %v, %v", ok, err)
	}
	// A pause still holds it.
	b.PauseUntil(clk.Now().Add(time.Second))
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("granted during a pause")
	}
	if d, _ := b.WaitTime(7); d != time.Second {
		t.Fatalf("WaitTime during the pause = %v", d)
	}
}

// TestInfReleasesWaiters switches a limit off live: SetRate(Inf) serves
// every queued waiter at once.
func TestInfReleasesWaiters(t *testing.T) {
	l, clk := rpmTPM(t)
	l.TryAcquire(3, 100)
	out := make(chan result, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Acquire(t.Context(), 1, 100)
			out <- result{id: i, err: err}
		}()
		waitQueued(t, l.bs[0], i+1)
	}
	if err := l.Bucket("tokens").SetRate(Inf); err != nil {
		t.Fatal(err)
	}
	if err := l.Bucket("requests").SetRate(Inf); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if r := <-out; r.err != nil {
			t.Fatal(r.err)
		}
	}
	wg.Wait()
	if ok, _ := l.TryAcquire(3, 100); !ok {
		t.Fatal("refused at rate Inf")
	}
	// And back: from a full bucket at the finite rate.
	l.Bucket("tokens").SetRate(Per(100, time.Second))
	l.Bucket("requests").SetRate(Per(3, time.Second))
	if ok, _ := l.TryAcquire(3, 100); !ok {
		t.Fatal("not full after Inf")
	}
	if d, _ := l.WaitTime(1, 1); d != time.Second/3+1 {
		t.Fatalf("WaitTime = %v", d)
	}
	_ = clk
}

func TestClosedAdmitsNothing(t *testing.T) {
	clk := newClock()
	rec := &recorder{}
	b, err := New(0, Per(10, time.Second), WithClock(clk), WithName("off"), WithObserver(rec))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if ok, err := b.TryAcquire(1); ok || err != nil {
		t.Fatalf("TryAcquire on a closed bucket = %v, %v; want false, nil", ok, err)
	}
	if ev := rec.take(); len(ev) != 1 || ev[0].Kind != EventRejected {
		t.Fatalf("events %+v", ev)
	}
	if err := b.Acquire(t.Context(), 1); !errors.Is(err, ErrCostExceedsCapacity) {
		t.Fatalf("Acquire = %v, want ErrCostExceedsCapacity", err)
	}
	if _, err := b.WaitTime(1); !errors.Is(err, ErrCostExceedsCapacity) {
		t.Fatalf("WaitTime = %v, want ErrCostExceedsCapacity", err)
	}
	// In a Limiter, a zero cost leaves the closed bucket out.
	open, _ := New(5, Per(5, time.Second), WithClock(clk))
	l, _ := NewLimiter(open, b)
	if ok, err := l.TryAcquire(1, 0); !ok || err != nil {
		t.Fatalf("TryAcquire(1, 0) = %v, %v", ok, err)
	}
	if ok, err := l.TryAcquire(1, 1); ok || err != nil {
		t.Fatalf("TryAcquire(1, 1) = %v, %v", ok, err)
	}
	if _, err := l.Acquire(t.Context(), 1, 1); !errors.Is(err, ErrCostExceedsCapacity) {
		t.Fatalf("Limiter.Acquire = %v", err)
	}
	// Closing a bucket live fails its waiters with ErrCostExceedsCapacity; opening it
	// again works from a level of 0.
	open.TryAcquire(4)
	errc := make(chan error, 1)
	go func() { _, err := l.Acquire(t.Context(), 5, 0); errc <- err }()
	waitQueued(t, open, 1)
	if l.Bucket("nope") != nil {
		t.Fatal("Bucket of an unknown name is not nil")
	}
	open.SetCapacity(0)
	if err := <-errc; !errors.Is(err, ErrCostExceedsCapacity) {
		t.Fatalf("waiter on a bucket closed live: %v", err)
	}
	open.SetCapacity(5)
	if d, _ := open.WaitTime(5); d != time.Second {
		t.Fatalf("WaitTime after reopening = %v, want 1s from empty", d)
	}

	// Keyed: a closed limit, compact or held.
	k := NewKeyed(func(string) []Limit {
		return []Limit{{Name: "off", Capacity: 0, Rate: Per(1, time.Second)}}
	}, WithClock(clk))
	if ok, err := k.TryAcquire("a", 1); ok || err != nil {
		t.Fatalf("Keyed.TryAcquire = %v, %v", ok, err)
	}
	if _, err := k.Acquire(t.Context(), "a", 1); !errors.Is(err, ErrCostExceedsCapacity) {
		t.Fatalf("Keyed.Acquire = %v", err)
	}
	if _, err := k.WaitTime("a", 1); !errors.Is(err, ErrCostExceedsCapacity) {
		t.Fatalf("Keyed.WaitTime = %v", err)
	}
	// ...and opened live through the key's Limiter.
	kl := k.Limiter("a")
	if err := kl.Bucket("off").SetCapacity(2); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	if ok, err := k.TryAcquire("a", 2); !ok || err != nil {
		t.Fatalf("key opened live: %v, %v", ok, err)
	}
}

// TestLimiterSetByName changes a key's limits live through its Limiter.
func TestLimiterSetByName(t *testing.T) {
	clk := newClock()
	k := NewKeyed(func(string) []Limit {
		return []Limit{
			{Name: "requests", Capacity: 10, Rate: Per(10, time.Second)},
			{Name: "tokens", Capacity: 1000, Rate: Per(1000, time.Second)},
		}
	}, WithClock(clk))
	l := k.Limiter("acme")
	k.TryAcquire("acme", 10, 1000)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := k.Acquire(ctx, "acme", 1, 500); done <- err }()
	waitQueued(t, l.bs[0], 1)
	// At 1000/s the waiter is due at 500ms; at 2000/s, at 250ms.
	if err := l.Bucket("tokens").SetRate(Per(2000, time.Second)); err != nil {
		t.Fatal(err)
	}
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(250 * time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := l.Bucket("requests").SetCapacity(2); err != nil {
		t.Fatal(err)
	}
	if _, err := k.TryAcquire("acme", 3, 0); !errors.Is(err, ErrCostExceedsCapacity) {
		t.Fatalf("cost above the capacity set live: %v", err)
	}
	if err := l.Bucket("tokens").SetRate(Per(-1, time.Second)); err == nil {
		t.Fatal("an invalid rate was accepted")
	}
}
