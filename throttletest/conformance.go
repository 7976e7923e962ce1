package throttletest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
)

// NewGate makes a fresh Gate of one limit, capacity tokens refilled at
// rate, on its own key, for one subtest of Conformance.
type NewGate func(t *testing.T, capacity int64, rate throttle.Rate) throttle.Gate

// Conformance runs the contract every store of a shared limit keeps,
// whether it holds the bucket in memory, in a host's file or in Redis:
// exactness, first come first served, failing fast past a deadline,
// settling, refunding, pausing when the Gate is a throttle.Pauser, taking
// and settling without a Permit when it is a throttle.Taker, and lowering
// when it is a throttle.Leveler.
//
// It runs on the real clock, as a store on a server's clock must: each
// subtest takes at most a few hundred milliseconds, and its checks allow
// for a machine that runs slow, never for one that runs over the limit.
func Conformance(t *testing.T, newGate NewGate) {
	t.Run("exact", func(t *testing.T) { conformExact(t, newGate) })
	t.Run("fifo", func(t *testing.T) { conformFIFO(t, newGate) })
	t.Run("failfast", func(t *testing.T) { conformFailFast(t, newGate) })
	t.Run("settle", func(t *testing.T) { conformSettle(t, newGate) })
	t.Run("refund", func(t *testing.T) { conformRefund(t, newGate) })
	t.Run("pause", func(t *testing.T) { conformPause(t, newGate) })
	t.Run("taker", func(t *testing.T) { conformTaker(t, newGate) })
	t.Run("leveler", func(t *testing.T) { conformLeveler(t, newGate) })
}

// conformExact has 4 goroutines ask as fast as they can for 200ms: the
// grants must stay within capacity + rate × the time the decisions took.
func conformExact(t *testing.T, newGate NewGate) {
	const capacity, perSecond = 5, 200
	g := newGate(t, capacity, throttle.Per(perSecond, time.Second))
	var granted int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(200 * time.Millisecond)
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				_, ok, err := g.TryAcquirePermit(1)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if most := capacity + perSecond*elapsed.Seconds(); float64(granted) > most {
		t.Errorf("%d grants in %v, at most %.1f allowed", granted, elapsed, most)
	}
	if granted < capacity {
		t.Errorf("%d grants in %v: not even the burst of %d", granted, elapsed, capacity)
	}
}

// conformFIFO sends three waiters 20ms apart behind an empty bucket that
// refills a token every 60ms: they must be served in their order of
// arrival. The spacing paces the arrivals (a Gate may not say when a
// waiter has joined its line); it is three times shorter than a turn.
func conformFIFO(t *testing.T, newGate NewGate) {
	g := newGate(t, 1, throttle.Per(50, 3*time.Second))
	if _, err := g.Acquire(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range 3 {
		wg.Go(func() {
			if _, err := g.Acquire(context.Background(), 1); err != nil {
				t.Error(err)
			}
			order <- i
		})
		pace := time.NewTimer(20 * time.Millisecond)
		<-pace.C
	}
	for i := range 3 {
		if got := <-order; got != i {
			t.Fatalf("turn %d went to waiter %d", i, got)
		}
	}
}

// conformFailFast asks for a wait longer than the deadline, which no
// refund can shorten (the tokens taken are settled at their full cost):
// the call must fail at once with a *throttle.WaitError, and take nothing.
func conformFailFast(t *testing.T, newGate NewGate) {
	g := newGate(t, 2, throttle.Per(1, time.Second))
	p, err := g.Acquire(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(2); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = g.Acquire(ctx, 1)
	var we *throttle.WaitError
	if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) || we.Wait < 500*time.Millisecond {
		t.Fatalf("Acquire with 50ms of a 1s wait = %v, want a *WaitError of about 1s", err)
	}
	if w, _ := g.WaitTime(1); w > time.Second {
		t.Errorf("WaitTime after the failed call = %v: it took something", w)
	}
}

// conformSettle settles a reservation down: the difference comes back.
func conformSettle(t *testing.T, newGate NewGate) {
	g := newGate(t, 10, throttle.Per(1, time.Minute))
	p, err := g.Acquire(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(4); err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(4); !errors.Is(err, throttle.ErrSettled) {
		t.Errorf("a second Settle = %v, want ErrSettled", err)
	}
	if _, ok, err := g.TryAcquirePermit(6); !ok || err != nil {
		t.Errorf("the 6 settled back: TryAcquirePermit(6) = %v, %v", ok, err)
	}
	if _, ok, _ := g.TryAcquirePermit(1); ok {
		t.Error("a token beyond what was settled back")
	}
}

// conformRefund cancels a permit, as for a call the vendor refused: all
// of it comes back.
func conformRefund(t *testing.T, newGate NewGate) {
	g := newGate(t, 10, throttle.Per(1, time.Minute))
	p, err := g.Acquire(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Cancel(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := g.TryAcquirePermit(10); !ok || err != nil {
		t.Errorf("after Cancel, TryAcquirePermit(10) = %v, %v", ok, err)
	}
}

// conformPause pauses the Gate for 150ms: no call goes through before
// the end, and a waiting one goes at it.
func conformPause(t *testing.T, newGate NewGate) {
	g := newGate(t, 10, throttle.Per(10, time.Second))
	p, ok := g.(throttle.Pauser)
	if !ok {
		t.Skip("not a Pauser")
	}
	end := time.Now().Add(150 * time.Millisecond)
	p.PauseUntil(end)
	if _, ok, _ := g.TryAcquirePermit(1); ok && time.Now().Before(end) {
		t.Error("TryAcquirePermit went through the pause")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := g.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// A store on a server's clock may end the pause a little early by
	// the clocks' difference; 20ms allows for it.
	if early := time.Until(end); early > 20*time.Millisecond {
		t.Errorf("Acquire went %v before the pause's end", early)
	}
}
