package throttle

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newFake(t testing.TB, capacity int64, r Rate) (*Bucket, *clockwork.FakeClock) {
	t.Helper()
	clk := clockwork.NewFakeClockAt(t0)
	b, err := New(capacity, r, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	return b, clk
}

// replay runs TryAcquire(cost) at each time (seconds) and returns the
// decisions.
func replay(t *testing.T, b *Bucket, clk *clockwork.FakeClock, times []float64, cost int64) []bool {
	t.Helper()
	var got []bool
	for _, s := range times {
		at := t0.Add(time.Duration(math.Round(s * 1e9)))
		clk.Advance(at.Sub(clk.Now()))
		ok, err := b.TryAcquire(cost)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ok)
	}
	return got
}

func TestTraces(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity int64
		rate     Rate
		times    []float64
		want     []bool
	}{
		{"basic", 2, Per(1, time.Second), []float64{0, 0, 0, 1, 3}, []bool{true, true, false, true, true}},
		{"idle gap is capped", 2, Per(10, time.Second), []float64{0, 100, 100, 100}, []bool{true, true, true, false}},
		{"rate zero", 1, Per(0, time.Second), []float64{0, 0, 0}, []bool{true, false, false}},
		{"rejection still moves time", 2, Per(1, 2*time.Second), []float64{0, 0, 1, 1.5}, []bool{true, true, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, clk := newFake(t, tc.capacity, tc.rate)
			got := replay(t, b, clk, tc.times, 1)
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestSlowRateNeverDrifts(t *testing.T) {
	// 0.1 token/s, one request a second for an hour: passes at t = 0, 10, 20 …
	b, clk := newFake(t, 1, Per(1, 10*time.Second))
	for s := 0; s <= 3600; s++ {
		ok, err := b.TryAcquire(1)
		if err != nil {
			t.Fatal(err)
		}
		if want := s%10 == 0; ok != want {
			t.Fatalf("t=%ds: got %v, want %v", s, ok, want)
		}
		clk.Advance(time.Second)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		capacity int64
		rate     Rate
	}{
		{-1, Per(1, time.Second)},
		{1, Per(-1, time.Second)},
		{1, Per(1, 0)},
		{1, Per(1, -time.Second)},
		{1, Rate{}},
	} {
		if _, err := New(tc.capacity, tc.rate); err == nil {
			t.Errorf("New(%d, %v) succeeded", tc.capacity, tc.rate)
		}
	}
}

func TestCostErrors(t *testing.T) {
	b, _ := newFake(t, 5, Per(1, time.Second))
	for _, c := range []int64{0, -1, math.MinInt64} {
		if _, err := b.TryAcquire(c); !errors.Is(err, ErrInvalidCost) {
			t.Errorf("TryAcquire(%d) = %v, want ErrInvalidCost", c, err)
		}
		if _, err := b.WaitTime(c); !errors.Is(err, ErrInvalidCost) {
			t.Errorf("WaitTime(%d) = %v, want ErrInvalidCost", c, err)
		}
	}
	if _, err := b.TryAcquire(6); !errors.Is(err, ErrCostExceedsCapacity) {
		t.Errorf("TryAcquire(6) = %v, want ErrCostExceedsCapacity", err)
	}
	if _, err := b.WaitTime(6); !errors.Is(err, ErrCostExceedsCapacity) {
		t.Errorf("WaitTime(6) = %v, want ErrCostExceedsCapacity", err)
	}
	if got := b.Tokens(); got != 5 {
		t.Errorf("errors spent tokens: level %v", got)
	}
}

func TestWaitTimeIsExact(t *testing.T) {
	// 3 tokens per 1s: one token every 333333333.33 ns.
	b, clk := newFake(t, 3, Per(3, time.Second))
	for range 3 {
		if ok, _ := b.TryAcquire(1); !ok {
			t.Fatal("full bucket refused")
		}
	}
	for i := range 20 {
		cost := int64(i%3 + 1)
		d, err := b.WaitTime(cost)
		if err != nil {
			t.Fatal(err)
		}
		if d > 0 {
			clk.Advance(d - 1)
			if ok, _ := b.TryAcquire(cost); ok {
				t.Fatalf("step %d: passed 1ns before WaitTime %v", i, d)
			}
			clk.Advance(1)
		}
		if ok, _ := b.TryAcquire(cost); !ok {
			t.Fatalf("step %d: refused after WaitTime %v", i, d)
		}
	}
}

func TestWaitTimeZeroWhenAvailable(t *testing.T) {
	b, _ := newFake(t, 2, Per(1, time.Second))
	if d, err := b.WaitTime(2); d != 0 || err != nil {
		t.Fatalf("WaitTime = %v, %v", d, err)
	}
}

func TestNoRefill(t *testing.T) {
	b, _ := newFake(t, 2, Per(0, time.Second))
	if ok, _ := b.TryAcquire(2); !ok {
		t.Fatal("full bucket refused")
	}
	if _, err := b.WaitTime(1); !errors.Is(err, ErrCostExceedsCapacity) {
		t.Fatalf("WaitTime = %v, want ErrCostExceedsCapacity", err)
	}
	if err := b.Acquire(t.Context(), 1); !errors.Is(err, ErrCostExceedsCapacity) {
		t.Fatalf("Acquire = %v, want ErrCostExceedsCapacity", err)
	}
}

func TestHugeValuesDoNotOverflow(t *testing.T) {
	b, clk := newFake(t, math.MaxInt64, Per(math.MaxInt64, time.Nanosecond))
	if ok, _ := b.TryAcquire(math.MaxInt64); !ok {
		t.Fatal("full bucket refused")
	}
	clk.Advance(1)
	if got := b.Tokens(); got != math.MaxInt64 {
		t.Fatalf("level %v after 1ns, want full", got)
	}
	// Slowest possible refill of a huge bucket: the wait saturates.
	b, clk = newFake(t, math.MaxInt64, Per(1, time.Duration(math.MaxInt64)))
	if ok, _ := b.TryAcquire(math.MaxInt64); !ok {
		t.Fatal("full bucket refused")
	}
	d, err := b.WaitTime(math.MaxInt64)
	if err != nil || d <= 0 {
		t.Fatalf("WaitTime = %v, %v", d, err)
	}
	clk.Advance(time.Duration(math.MaxInt64 / 2))
	if got := b.Tokens(); got < 0 || got > 1 {
		t.Fatalf("level %v", got)
	}
	// An idle time longer than any refill.
	b, clk = newFake(t, 10, Per(math.MaxInt64, time.Duration(math.MaxInt64)))
	b.TryAcquire(10)
	clk.Advance(time.Duration(math.MaxInt64 - 10))
	if got := b.Tokens(); got != 10 {
		t.Fatalf("level %v, want 10", got)
	}
}

func TestClockBackwardsAddsNothing(t *testing.T) {
	b, clk := newFake(t, 1, Per(1, time.Second))
	b.TryAcquire(1)
	clk.Advance(-time.Hour)
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("clock going back minted a token")
	}
	clk.Advance(time.Hour + time.Second - 1)
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("passed before a full second of forward time")
	}
	clk.Advance(1)
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("refused after a full second")
	}
}

// TestClockBackwardsKeepsLevel checks that after the clock goes back every
// entry point agrees: the level already reached can be spent at once, and
// what is missing comes only with forward time past the latest instant.
func TestClockBackwardsKeepsLevel(t *testing.T) {
	b, clk := newFake(t, 2, Per(1, time.Second))
	b.TryAcquire(2)
	clk.Advance(time.Second)
	if got := b.Tokens(); got != 1 { // read now: refill is lazy
		t.Fatalf("level %v, want 1", got)
	}
	clk.Advance(-10 * time.Second)
	if d, err := b.WaitTime(1); d != 0 || err != nil {
		t.Fatalf("WaitTime(1) = %v, %v; want 0: the token is there", d, err)
	}
	ctx, cancel := clockwork.WithTimeout(t.Context(), clk, time.Millisecond) // too short to wait
	defer cancel()
	if err := b.Acquire(ctx, 1); err != nil {
		t.Fatalf("Acquire of the token that is there: %v", err)
	}
	if d, _ := b.WaitTime(1); d != 11*time.Second {
		t.Fatalf("WaitTime(1) = %v, want 11s: back to the latest instant, then 1s", d)
	}
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("a clock going back minted a token")
	}
}

// model is the ideal bucket in exact rational arithmetic.
type model struct {
	level, capacity, rate *big.Rat // rate in tokens per nanosecond
	last                  int64
}

func newModel(capacity int64, r Rate) *model {
	return &model{
		level:    new(big.Rat).SetInt64(capacity),
		capacity: new(big.Rat).SetInt64(capacity),
		rate:     big.NewRat(r.Tokens(), int64(r.Period())),
	}
}

func (m *model) try(now, cost int64) bool {
	if now > m.last {
		add := new(big.Rat).Mul(m.rate, new(big.Rat).SetInt64(now-m.last))
		m.level.Add(m.level, add)
		if m.level.Cmp(m.capacity) > 0 {
			m.level.Set(m.capacity)
		}
		m.last = now
	}
	c := new(big.Rat).SetInt64(cost)
	if m.level.Cmp(c) < 0 {
		return false
	}
	m.level.Sub(m.level, c)
	return true
}

// TestMatchesRationalModel compares every decision on thousands of random
// traces with the ideal bucket. Gaps cluster around the emission interval,
// where float arithmetic goes wrong.
func TestMatchesRationalModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	traces, decisions := 3000, 0
	if testing.Short() || raceEnabled {
		traces = 300
	}
	for trace := range traces {
		capacity := rng.Int64N(10) + 1
		tokens := rng.Int64N(1000) + 1
		period := time.Duration(rng.Int64N(int64(3*time.Second))) + 1
		r := Per(tokens, period)
		b, clk := newFake(t, capacity, r)
		m := newModel(capacity, r)
		interval := int64(period) / tokens
		var now int64
		for i := range 200 {
			gap := interval + rng.Int64N(interval/50+3) - interval/100 - 1
			if rng.IntN(10) == 0 {
				gap = rng.Int64N(interval*int64(capacity)+1) + 0
			}
			now += max(gap, 0)
			clk.Advance(t0.Add(time.Duration(now)).Sub(clk.Now()))
			cost := rng.Int64N(capacity) + 1
			got, err := b.TryAcquire(cost)
			if err != nil {
				t.Fatal(err)
			}
			if want := m.try(now, cost); got != want {
				t.Fatalf("trace %d (capacity %d, rate %v) step %d at %dns cost %d: got %v, want %v",
					trace, capacity, r, i, now, cost, got, want)
			}
			decisions++
		}
	}
	t.Logf("%d traces, %d decisions, all equal to the rational model", traces, decisions)
}

// TestTryAcquireConcurrent has goroutines contend for a bucket that does
// not refill during the test, on the real clock, so that some of them read
// the clock while another holds the lock: together they get exactly the
// capacity, never more.
func TestTryAcquireConcurrent(t *testing.T) {
	const capacity = 1000
	b, err := New(capacity, Per(1, 24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := tryConcurrently(b, 8, 500)(); got != capacity {
		t.Fatalf("%d granted, want exactly %d", got, capacity)
	}
}

// tryConcurrently starts workers goroutines that each call b.TryAcquire(1) tries
// times. The returned function waits for them and says how many calls were
// granted.
func tryConcurrently(b *Bucket, workers, tries int) (granted func() int64) {
	var n atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range tries {
				if ok, _ := b.TryAcquire(1); ok {
					n.Add(1)
				}
			}
		})
	}
	return func() int64 {
		wg.Wait()
		return n.Load()
	}
}

// TestTryAcquireWhileJoined has goroutines spend from a bucket on the real
// clock while it is joined, again and again, into Limiters, each of which
// moves it to another group and time line. Together they get exactly the
// capacity, and under -race a call that spent under the lock of a group
// the bucket had already left is reported as a data race.
func TestTryAcquireWhileJoined(t *testing.T) {
	const capacity = 1000
	b, err := New(capacity, Per(1, 24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	granted := tryConcurrently(b, 4, 500)
	for range 50 {
		other, err := New(1, Per(1, time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewLimiter(other, b); err != nil {
			t.Fatal(err)
		}
	}
	if got := granted(); got != capacity {
		t.Fatalf("%d granted, want exactly %d", got, capacity)
	}
}
