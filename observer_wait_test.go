package throttle

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestRejectedTryAcquireReportsWait checks that a refused TryAcquire, on a
// Bucket, a Limiter, a compact key and a held key alike, reports in its
// events the wait WaitTime gives at that moment: the whole acquisition's,
// behind the queue.
func TestRejectedTryAcquireReportsWait(t *testing.T) {
	clk := newClock()
	rec := &recorder{}
	req, _ := New(10, Per(10, time.Second), WithClock(clk), WithName("requests"), WithObserver(rec))
	tok, _ := New(100, Per(100, time.Second), WithClock(clk), WithName("tokens"), WithObserver(rec))
	l, _ := NewLimiter(req, tok)
	l.TryAcquire(10, 50)
	rec.take()
	// requests needs 100ms, tokens 500ms: the whole acquisition, 500ms.
	if ok, _ := l.TryAcquire(1, 100); ok {
		t.Fatal("granted")
	}
	want := []Event{
		{Kind: EventRejected, Limit: "requests", Cost: 1, Wait: 500 * time.Millisecond},
		{Kind: EventRejected, Limit: "tokens", Cost: 100, Wait: 500 * time.Millisecond},
	}
	if got := rec.take(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, want %+v", got, want)
	}

	// Behind a queued waiter, the wait counts the queue, on a Bucket too.
	out := make(chan result, 1)
	var wg sync.WaitGroup
	start(t, req, clk, t.Context(), 0, 5, out, &wg) // served at 500ms
	rec.take()
	if ok, _ := req.TryAcquire(2); ok {
		t.Fatal("granted past the queue")
	}
	d, _ := req.WaitTime(2)
	if got := rec.take(); len(got) != 1 || got[0].Wait != 700*time.Millisecond || d != 700*time.Millisecond {
		t.Fatalf("got %+v (WaitTime %v), want a wait of 700ms", got, d)
	}
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(500 * time.Millisecond)
	if r := <-out; r.err != nil || r.at != 500*time.Millisecond {
		t.Fatalf("waiter: %+v", r)
	}
	wg.Wait()

	// Keyed: a compact key and a held one.
	krec := &recorder{}
	k := NewKeyed(func(string) []Limit {
		return []Limit{{Name: "req", Capacity: 4, Rate: Per(4, time.Second)}}
	}, WithClock(clk), WithObserver(krec))
	for _, held := range []bool{false, true} {
		key := "compact"
		if held {
			key = "held"
			lim := k.Limiter(key) // held by its Limiter
			defer runtime.KeepAlive(lim)
		}
		k.TryAcquire(key, 4)
		krec.take()
		if ok, _ := k.TryAcquire(key, 3); ok {
			t.Fatal("granted")
		}
		if got := krec.take(); len(got) != 1 || got[0].Kind != EventRejected || got[0].Wait != 750*time.Millisecond {
			t.Fatalf("key %q: got %+v, want a rejection with a wait of 750ms", key, got)
		}
	}
}

// TestSharedBucketCouplesQueues pins the coupling NewLimiter documents:
// with a waiter queued on a shared daily limit through one Limiter, a
// bucket of the other Limiter refuses a bare TryAcquire though it is full.
func TestSharedBucketCouplesQueues(t *testing.T) {
	clk := newClock()
	daily, _ := New(1000, Per(1000, 24*time.Hour), WithClock(clk), WithName("daily"))
	rpmA, _ := New(10, Per(10, time.Minute), WithClock(clk), WithName("a"))
	rpmB, _ := New(10, Per(10, time.Minute), WithClock(clk), WithName("b"))
	a, _ := NewLimiter(rpmA, daily)
	NewLimiter(rpmB, daily)
	a.TryAcquire(1, 1000)
	ctx, cancel := context.WithCancel(t.Context())
	out := make(chan result, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := a.Acquire(ctx, 1, 500)
		out <- result{err: err}
	}()
	waitQueued(t, daily, 1)
	if ok, _ := rpmB.TryAcquire(1); ok {
		t.Fatal("b's bucket jumped the shared queue")
	}
	cancel()
	if r := <-out; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("waiter: %v", r.err)
	}
	wg.Wait()
	if ok, _ := rpmB.TryAcquire(1); !ok {
		t.Fatal("b's bucket refused with nobody queued")
	}
}
