package budget_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/budget"
)

var t0 = time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)

func newBudget(t *testing.T, limit int64, opts ...budget.Option) (*budget.Budget, *clockwork.FakeClock) {
	t.Helper()
	clk := clockwork.NewFakeClockAt(t0)
	b, err := budget.New("opus-daily", limit, budget.Daily(time.UTC), append([]budget.Option{budget.WithClock(clk)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return b, clk
}

func TestSpentBudgetFailsAtOnceNamingItsReset(t *testing.T) {
	b, _ := newBudget(t, 100)
	ctx := context.Background()
	if _, err := b.Acquire(ctx, 60); err != nil {
		t.Fatal(err)
	}
	// The fake clock never moves: an Acquire that waited would hang here.
	_, err := b.Acquire(ctx, 50)
	var se *budget.SpentError
	if !errors.As(err, &se) {
		t.Fatalf("Acquire past the limit = %v, want a *SpentError", err)
	}
	want := budget.SpentError{Budget: "opus-daily", Limit: 100, Spent: 60, Cost: 50, Resets: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)}
	if *se != want {
		t.Errorf("SpentError = %+v, want %+v", *se, want)
	}
	if w, err := b.WaitTime(50); err != nil || w != 2*time.Hour {
		t.Errorf("WaitTime(50) = %v, %v, want the 2h until midnight", w, err)
	}
	if _, ok, err := b.TryAcquirePermit(50); ok || err != nil {
		t.Errorf("TryAcquirePermit past the limit = %v, %v, want false, nil", ok, err)
	}
	if _, err := b.Acquire(ctx, 40); err != nil {
		t.Errorf("Acquire of what is left: %v", err)
	}
}

func TestWindowResetGivesTheLimitBack(t *testing.T) {
	b, clk := newBudget(t, 100)
	ctx := context.Background()
	if _, err := b.Acquire(ctx, 100); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2*time.Hour - time.Nanosecond)
	if _, err := b.Acquire(ctx, 1); err == nil {
		t.Fatal("the budget refilled before its window ended")
	}
	clk.Advance(time.Nanosecond)
	if _, err := b.Acquire(ctx, 100); err != nil {
		t.Errorf("the next day's Acquire: %v", err)
	}
}

func TestSettleChargesActualAndCancelRefunds(t *testing.T) {
	b, _ := newBudget(t, 100)
	ctx := context.Background()
	p, err := b.Acquire(ctx, 50)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(20); err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(20); !errors.Is(err, throttle.ErrSettled) {
		t.Errorf("a second Settle = %v, want ErrSettled", err)
	}
	failed, err := b.Acquire(ctx, 80)
	if err != nil {
		t.Fatalf("80 after 20 settled: %v", err)
	}
	if err := failed.Cancel(); err != nil {
		t.Fatal(err)
	}
	// An overrun is charged whatever the limit: it was spent.
	over, err := b.Acquire(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := over.Settle(90); err != nil {
		t.Fatal(err)
	}
	if got := remaining(b); got != 0 {
		t.Errorf("remaining after 20 + 90 of 100 = %d, want 0", got)
	}
	var se *budget.SpentError
	if _, err := b.Acquire(ctx, 1); !errors.As(err, &se) || se.Spent != 110 {
		t.Errorf("Acquire after the overrun = %v, want a SpentError with Spent 110", err)
	}
}

func remaining(b *budget.Budget) int64 { return b.Status(nil)[0].Remaining }

func TestThresholdsAlertOnceEach(t *testing.T) {
	var got []budget.Alert
	b, clk := newBudget(t, 100, budget.OnThreshold(func(a budget.Alert) { got = append(got, a) }))
	ctx := context.Background()
	for _, c := range []int64{50, 29, 1, 10} { // 50, 79, 80 (alert), 90
		if _, err := b.Acquire(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	p, err := b.Acquire(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(10); err != nil { // 95 → 100 by the settlement: alert
		t.Fatal(err)
	}
	resets := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	want := []budget.Alert{
		{Budget: "opus-daily", Threshold: 0.8, Spent: 80, Limit: 100, Resets: resets},
		{Budget: "opus-daily", Threshold: 1, Spent: 100, Limit: 100, Resets: resets},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("alerts = %+v, want %+v", got, want)
	}
	clk.Advance(3 * time.Hour)
	got = nil
	if _, err := b.Acquire(ctx, 85); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Threshold != 0.8 {
		t.Errorf("the next window's alerts = %+v, want 80%% once", got)
	}
}

// events collects the events an Observer is told.
type events []throttle.Event

func (e *events) Observe(ev throttle.Event) { *e = append(*e, ev) }

// TestThresholdsReachObservers: WithObserver hears each threshold once a
// window as an EventThreshold, with the key of For in its Limit, whether
// or not OnThreshold has a function; a custom set of fractions applies to
// the observers too.
func TestThresholdsReachObservers(t *testing.T) {
	var got events
	b, _ := newBudget(t, 100, budget.WithObserver(&got), budget.OnThreshold(nil, 0.5, 1))
	ctx := context.Background()
	for _, c := range []int64{40, 20, 30, 10} { // 40, 60 (0.5), 90, 100 (1)
		if _, err := b.For("tenant-a").Acquire(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	resets := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	want := events{
		{Kind: throttle.EventThreshold, Limit: "opus-daily/tenant-a", Threshold: 0.5, Cost: 60, Estimate: 100, Until: resets},
		{Kind: throttle.EventThreshold, Limit: "opus-daily/tenant-a", Threshold: 1, Cost: 100, Estimate: 100, Until: resets},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("events = %+v, want %+v", got, want)
	}
	if _, err := budget.New("b", 1, budget.Daily(nil), budget.WithObserver(nil)); !errors.Is(err, throttle.ErrInvalidOption) {
		t.Errorf("WithObserver(nil) = %v, want ErrInvalidOption", err)
	}
}

func TestForKeepsASpendPerKey(t *testing.T) {
	b, _ := newBudget(t, 10)
	ctx := context.Background()
	if _, err := b.For("tenant-a").Acquire(ctx, 10); err != nil {
		t.Fatal(err)
	}
	var se *budget.SpentError
	if _, err := b.For("tenant-a").Acquire(ctx, 1); !errors.As(err, &se) || se.Key != "tenant-a" {
		t.Errorf("tenant-a's second call = %v, want a SpentError for tenant-a", err)
	}
	if _, err := b.For("tenant-b").Acquire(ctx, 10); err != nil {
		t.Errorf("tenant-b has a spend of its own: %v", err)
	}
	if _, err := b.Acquire(ctx, 10); err != nil {
		t.Errorf("the budget with no key has a spend of its own: %v", err)
	}
}

func TestInvalidCostsAndOptions(t *testing.T) {
	b, _ := newBudget(t, 10)
	for _, costs := range [][]int64{{}, {1, 1}, {0}, {-1}} {
		if _, err := b.Acquire(context.Background(), costs...); !errors.Is(err, throttle.ErrInvalidCost) {
			t.Errorf("Acquire(%v) = %v, want ErrInvalidCost", costs, err)
		}
	}
	if _, err := b.Acquire(context.Background(), 11); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
		t.Errorf("a cost above the limit = %v, want ErrCostExceedsCapacity", err)
	}
	for _, c := range []struct {
		limit int64
		w     budget.Window
		o     budget.Option
	}{{0, budget.Daily(nil), nil}, {1, nil, nil}, {1, budget.Daily(nil), budget.WithStore(nil)},
		{1, budget.Daily(nil), budget.WithClock(nil)}, {1, budget.Daily(nil), budget.OnThreshold(nil, 0)}} {
		var opts []budget.Option
		if c.o != nil {
			opts = append(opts, c.o)
		}
		if _, err := budget.New("x", c.limit, c.w, opts...); !errors.Is(err, throttle.ErrInvalidOption) {
			t.Errorf("New(%d, %v, …) = %v, want ErrInvalidOption", c.limit, c.w, err)
		}
	}
}

func TestPauseHoldsCallsAndFailsFastOnDeadline(t *testing.T) {
	b, clk := newBudget(t, 100)
	b.PauseUntil(clk.Now().Add(time.Minute))
	if _, ok, _ := b.TryAcquirePermit(1); ok {
		t.Error("TryAcquirePermit went through a pause")
	}
	ctx, cancel := clockwork.WithTimeout(t.Context(), clk, 30*time.Second)
	defer cancel()
	var we *throttle.WaitError
	if _, err := b.Acquire(ctx, 1); !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) || we.Wait != time.Minute {
		t.Errorf("Acquire with a deadline before the pause's end = %v, want a 1m WaitError", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.Acquire(context.Background(), 1)
		done <- err
	}()
	if err := clk.BlockUntilContext(context.Background(), 2); err != nil { // the timeout's timer and the waiter's
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("Acquire returned %v during the pause", err)
	default:
	}
	clk.Advance(time.Minute)
	if err := <-done; err != nil {
		t.Errorf("Acquire after the pause: %v", err)
	}
	if st := b.Status(nil)[0]; st.Remaining != 99 || !st.Paused.IsZero() {
		t.Errorf("Status after the pause = %+v", st)
	}
}

func TestConcurrentReservationsNeverOverspend(t *testing.T) {
	b, _ := newBudget(t, 1000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := int64(0)
	for range 8 {
		wg.Go(func() {
			for range 300 {
				if _, ok, err := b.For("k").TryAcquirePermit(1); err != nil {
					t.Error(err)
				} else if ok {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if granted != 1000 {
		t.Errorf("granted %d of a limit of 1000 to 2400 asks", granted)
	}
}

func TestStatusAndLimits(t *testing.T) {
	b, _ := newBudget(t, 100)
	if _, err := b.Acquire(context.Background(), 30); err != nil {
		t.Fatal(err)
	}
	st := b.Status(nil)
	if len(st) != 1 || st[0].Name != "opus-daily" || st[0].Remaining != 70 || st[0].Reset != 2*time.Hour || st[0].Capacity != 100 {
		t.Errorf("Status = %+v", st)
	}
	l := b.Limits()
	if len(l) != 1 || l[0].Name != "opus-daily" || l[0].Capacity != 100 || l[0].Rate != throttle.Per(100, 24*time.Hour) {
		t.Errorf("Limits = %+v", l)
	}
}
