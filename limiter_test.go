package throttle

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// rpmTPM is a provider's pair of limits: 3 requests and 100 tokens a second.
func rpmTPM(t *testing.T) (*Limiter, *clockwork.FakeClock) {
	t.Helper()
	clk := clockwork.NewFakeClockAt(t0)
	req, err := New(3, Per(3, time.Second), WithClock(clk), WithName("requests"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := New(100, Per(100, time.Second), WithClock(clk), WithName("tokens"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLimiter(req, tok)
	if err != nil {
		t.Fatal(err)
	}
	return l, clk
}

func TestLimiterAllOrNothing(t *testing.T) {
	l, clk := rpmTPM(t)
	// The token limit binds first.
	if ok, _ := l.TryAcquire(1, 90); !ok {
		t.Fatal("first call refused")
	}
	if ok, _ := l.TryAcquire(1, 20); ok {
		t.Fatal("token limit ignored")
	}
	if got := l.Bucket("requests").Tokens(); got != 2 {
		t.Fatalf("a refused call spent requests: %v left", got)
	}
	if d, _ := l.WaitTime(1, 20); d != 100*time.Millisecond {
		t.Fatalf("WaitTime = %v, want 100ms for the tokens", d)
	}
	clk.Advance(100 * time.Millisecond)
	// Now the request limit binds: 2.3 requests left, 30 tokens.
	for range 2 {
		if ok, _ := l.TryAcquire(1, 1); !ok {
			t.Fatal("cheap call refused")
		}
	}
	if ok, _ := l.TryAcquire(1, 1); ok {
		t.Fatal("request limit ignored")
	}
	// 0.3 requests left: 0.7 more takes 0.7 × 333.33ms.
	if d, _ := l.WaitTime(1, 1); d != 233333334*time.Nanosecond {
		t.Fatalf("WaitTime = %v, want 233.333334ms", d)
	}
}

func TestLimiterErrorsNameTheLimit(t *testing.T) {
	l, _ := rpmTPM(t)
	_, err := l.TryAcquire(1, 101)
	if !errors.Is(err, ErrCostExceedsCapacity) || !contains(err.Error(), `"tokens"`) {
		t.Fatalf("err = %v", err)
	}
	if _, err := l.TryAcquire(1); !errors.Is(err, ErrInvalidCost) {
		t.Fatalf("wrong number of costs: %v", err)
	}
	if _, err := l.TryAcquire(0, 0); !errors.Is(err, ErrInvalidCost) {
		t.Fatalf("all-zero costs: %v", err)
	}
	if _, err := l.Acquire(t.Context(), 1, -1); !errors.Is(err, ErrInvalidCost) {
		t.Fatalf("negative cost: %v", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestLimiterAcquireWaitsForLatest(t *testing.T) {
	l, clk := rpmTPM(t)
	l.TryAcquire(3, 10)
	done := make(chan time.Duration, 1)
	go func() {
		p, err := l.Acquire(t.Context(), 1, 50)
		if err != nil || p == nil {
			t.Error(err)
		}
		done <- clk.Since(t0)
	}()
	// Requests: one in 333.33ms; tokens: 90 left, so at once. Latest wins.
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(333333333)
	select {
	case <-done:
		t.Fatal("granted before a request was available")
	default:
	}
	clk.Advance(1)
	if at := <-done; at != 333333334 {
		t.Fatalf("granted at %v", at)
	}
}

func TestSettleRefundAndDebt(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	b, _ := New(100, Per(10, time.Second), WithClock(clk), WithName("tokens"))
	p, err := b.AcquirePermit(t.Context(), 60)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(20); err != nil { // used less: 40 back
		t.Fatal(err)
	}
	if got := b.Tokens(); got != 80 {
		t.Fatalf("after refund: %v, want 80", got)
	}
	if err := p.Settle(20); !errors.Is(err, ErrSettled) {
		t.Fatalf("second Settle = %v", err)
	}
	if got := b.Tokens(); got != 80 {
		t.Fatalf("second settle changed the level: %v", got)
	}
	// Used more than estimated: the level goes into debt.
	p, _ = b.AcquirePermit(t.Context(), 80)
	if err := p.Settle(130); err != nil {
		t.Fatal(err)
	}
	if got := b.Tokens(); got != -50 {
		t.Fatalf("after debt: %v, want -50", got)
	}
	// A waiter for 10 tokens behind the debt is served after 60 tokens of
	// refill: exactly 6s.
	done := make(chan time.Duration, 1)
	go func() {
		if err := b.Acquire(t.Context(), 10); err != nil {
			t.Error(err)
		}
		done <- clk.Since(t0)
	}()
	clk.BlockUntilContext(t.Context(), 1)
	if d, _ := b.WaitTime(1); d != 6*time.Second+100*time.Millisecond {
		t.Fatalf("WaitTime behind the waiter = %v", d)
	}
	clk.Advance(6*time.Second - 1)
	select {
	case <-done:
		t.Fatal("served before the debt was repaid")
	default:
	}
	clk.Advance(1)
	if at := <-done; at != 6*time.Second {
		t.Fatalf("served at %v, want 6s", at)
	}
}

func TestSettleRetimesQueuedWaiter(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	b, _ := New(100, Per(10, time.Second), WithClock(clk))
	p, _ := b.AcquirePermit(t.Context(), 100)
	done := make(chan time.Duration, 1)
	go func() {
		b.Acquire(t.Context(), 50)
		done <- clk.Since(t0)
	}()
	clk.BlockUntilContext(t.Context(), 1) // the waiter sleeps until 5s
	p.Settle(70)                          // 30 back: it needs 2s now
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(2 * time.Second)
	if at := <-done; at != 2*time.Second {
		t.Fatalf("served at %v, want 2s", at)
	}
}

func TestPermitCancelReturnsAll(t *testing.T) {
	l, _ := rpmTPM(t)
	p, err := l.Acquire(t.Context(), 1, 70)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Cancel(); err != nil {
		t.Fatal(err)
	}
	if r, tk := l.Bucket("requests").Tokens(), l.Bucket("tokens").Tokens(); r != 3 || tk != 100 {
		t.Fatalf("after Cancel: %v requests, %v tokens", r, tk)
	}
	if err := p.Settle(1, 1); !errors.Is(err, ErrSettled) {
		t.Fatalf("Settle after Cancel = %v", err)
	}
}

func TestRefundChargeDrain(t *testing.T) {
	b, _ := newFake(t, 10, Per(1, time.Second))
	b.Charge(15)
	if got := b.Tokens(); got != -5 {
		t.Fatalf("after Charge: %v", got)
	}
	b.Refund(100)
	if got := b.Tokens(); got != 10 {
		t.Fatalf("Refund went above capacity: %v", got)
	}
	b.Drain(4)
	if got := b.Tokens(); got != 4 {
		t.Fatalf("after Drain(4): %v", got)
	}
	b.Drain(7) // never raises
	if got := b.Tokens(); got != 4 {
		t.Fatalf("Drain raised the level: %v", got)
	}
	if err := b.Charge(-1); !errors.Is(err, ErrInvalidCost) {
		t.Fatalf("Charge(-1) = %v", err)
	}
}

func TestSetRateRetimesWaiter(t *testing.T) {
	b, clk := newFake(t, 10, Per(1, time.Second))
	b.TryAcquire(10)
	done := make(chan time.Duration, 1)
	go func() {
		b.Acquire(t.Context(), 10)
		done <- clk.Since(t0)
	}()
	clk.BlockUntilContext(t.Context(), 1) // would sleep until 10s
	clk.Advance(time.Second)              // 1 token
	if err := b.SetRate(Per(9, time.Second)); err != nil {
		t.Fatal(err)
	}
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(time.Second) // 1 + 9 = 10 at 2s
	if at := <-done; at != 2*time.Second {
		t.Fatalf("served at %v, want 2s", at)
	}
	if b.Rate() != Per(9, time.Second) {
		t.Fatalf("Rate = %v", b.Rate())
	}
}

func TestSetCapacity(t *testing.T) {
	b, clk := newFake(t, 10, Per(1, time.Second))
	b.TryAcquire(10)
	out := make(chan result, 2)
	var wg sync.WaitGroup
	start(t, b, clk, t.Context(), 0, 8, out, &wg)
	start(t, b, clk, t.Context(), 1, 2, out, &wg)
	b.SetCapacity(5)
	if r := <-out; r.id != 0 || !errors.Is(r.err, ErrCostExceedsCapacity) {
		t.Fatalf("got %+v, want waiter 0 to fail", r)
	}
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(2 * time.Second)
	if r := <-out; r.id != 1 || r.at != 2*time.Second {
		t.Fatalf("got %+v", r)
	}
	wg.Wait()
	clk.Advance(time.Hour)
	if got := b.Tokens(); got != 5 {
		t.Fatalf("level %v above the new capacity", got)
	}
}

func TestPauseUntilHoldsEveryone(t *testing.T) {
	b, clk := newFake(t, 10, Per(10, time.Second))
	b.TryAcquire(10)
	clk.Advance(time.Second) // full again
	pauseEnd := clk.Now().Add(2 * time.Second)
	b.PauseUntil(pauseEnd)
	b.PauseUntil(clk.Now().Add(time.Second)) // never shortens
	if until, ok := b.PausedUntil(); !ok || !until.Equal(pauseEnd) {
		t.Fatalf("PausedUntil = %v, %v", until, ok)
	}
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("TryAcquire passed during the pause")
	}
	out := make(chan result, 100)
	var wg sync.WaitGroup
	for i := range 100 {
		start(t, b, clk, t.Context(), i, 1, out, &wg)
	}
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(2*time.Second - 1)
	select {
	case r := <-out:
		t.Fatalf("waiter %d served during the pause", r.id)
	default:
	}
	// The level at the pause was 10, and nothing accrued during it: ten are
	// served at the end of the pause, then one every 100ms, in order.
	clk.Advance(1)
	seen := map[int]bool{}
	for range 10 {
		r := <-out
		if r.id >= 10 || r.at != 3*time.Second {
			t.Fatalf("got %+v at the end of the pause", r)
		}
		seen[r.id] = true
	}
	for i := 10; i < 100; i++ {
		clk.BlockUntilContext(t.Context(), 1)
		clk.Advance(100 * time.Millisecond)
		if r := <-out; r.id != i || r.at != 3*time.Second+time.Duration(i-9)*100*time.Millisecond {
			t.Fatalf("got %+v, want waiter %d", r, i)
		}
	}
	wg.Wait()
}

// TestSharedLimitNoDeadlock shares a daily token limit between two models'
// limiters and hammers both from many goroutines.
func TestSharedLimitNoDeadlock(t *testing.T) {
	daily, _ := New(1_000_000, Per(1_000_000, time.Hour), WithName("daily"))
	a, _ := New(1000, Per(1_000_000, time.Second), WithName("a"))
	b, _ := New(1000, Per(1_000_000, time.Second), WithName("b"))
	la, err := NewLimiter(a, daily)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := NewLimiter(daily, b)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				var err error
				if i%2 == 0 {
					_, err = la.Acquire(ctx, 1, 1)
				} else {
					_, err = lb.Acquire(ctx, 1, 1)
				}
				if err != nil {
					t.Error(err)
					return
				}
				daily.TryAcquire(1)
			}
		}()
	}
	wg.Wait()
	if got := daily.Tokens(); got > 1_000_000-4000 {
		t.Fatalf("daily level %v: the shared limit was not charged", got)
	}
}

func TestNewLimiterErrors(t *testing.T) {
	a, _ := New(1, Per(1, time.Second))
	if _, err := NewLimiter(); err == nil {
		t.Error("empty limiter accepted")
	}
	if _, err := NewLimiter(a, a); err == nil {
		t.Error("duplicate bucket accepted")
	}
	f, _ := New(1, Per(1, time.Second), WithClock(clockwork.NewFakeClock()))
	if _, err := NewLimiter(a, f); err == nil {
		t.Error("buckets on different clocks accepted")
	}
}

// TestJoinMovesWaiters joins a bucket that has a waiter into a limiter.
func TestJoinMovesWaiters(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	a, _ := New(1, Per(1, time.Second), WithClock(clk))
	a.TryAcquire(1)
	done := make(chan time.Duration, 1)
	go func() {
		a.Acquire(t.Context(), 1)
		done <- clk.Since(t0)
	}()
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(500 * time.Millisecond)
	bk, _ := New(1, Per(1, time.Second), WithClock(clk))
	if _, err := NewLimiter(bk, a); err != nil {
		t.Fatal(err)
	}
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(500 * time.Millisecond)
	if at := <-done; at != time.Second {
		t.Fatalf("served at %v", at)
	}
}

// TestAcquireAtOnceAllocs pins what a grant at once allocates: nothing for
// Bucket.Acquire, the Permit alone for Limiter.Acquire over the usual pair
// of limits. The costs a caller passes must not escape, though a call that
// queues keeps them meanwhile.
func TestAcquireAtOnceAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ctx := t.Context()
	var bs []*Bucket
	for range 2 {
		b, err := New(1<<62, Per(1e9, time.Second))
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	if n := testing.AllocsPerRun(1000, func() { bs[0].Acquire(ctx, 1) }); n != 0 {
		t.Errorf("Bucket.Acquire: %v allocs, want 0", n)
	}
	l, err := NewLimiter(bs...)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { l.Acquire(ctx, 1, 100) }); n != 1 {
		t.Errorf("Limiter.Acquire: %v allocs, want 1 (the Permit)", n)
	}
}
