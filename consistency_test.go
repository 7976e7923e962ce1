package throttle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/htb"
)

// TestClosedQuotaAsClosedBucket checks that a capacity of 0 means the same
// for NewQuota as for New: a closed limit that admits nothing.
func TestClosedQuotaAsClosedBucket(t *testing.T) {
	clk := clockwork.NewFakeClock()
	b, err := throttle.New(0, throttle.Per(1, time.Second), throttle.WithClock(clk))
	if err != nil {
		t.Fatalf("New(0): %v", err)
	}
	q, err := htb.NewQuota(0, throttle.Per(1, time.Second), throttle.WithClock(clk))
	if err != nil {
		t.Fatalf("NewQuota(0): %v", err)
	}
	if ok, err := b.TryAcquire(1); ok || err != nil {
		t.Fatalf("closed bucket TryAcquire = %v, %v", ok, err)
	}
	if ok, err := q.TryAcquire(1); ok || err != nil {
		t.Fatalf("closed quota TryAcquire = %v, %v; want false, nil as a closed bucket", ok, err)
	}
	if err := q.Acquire(t.Context(), 1); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
		t.Fatalf("closed quota Acquire: %v, want ErrCostExceedsCapacity", err)
	}
	if _, err := q.WaitTime(1); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
		t.Fatalf("closed quota WaitTime: %v, want ErrCostExceedsCapacity", err)
	}
	if _, err := q.NewClass(htb.Config{Name: "a", Rate: throttle.Per(1, time.Second)}); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
		t.Fatalf("NewClass on a closed quota: %v, want ErrCostExceedsCapacity", err)
	}
	if _, err := htb.NewQuota(-1, throttle.Per(1, time.Second)); err == nil {
		t.Fatal("NewQuota(-1) accepted")
	}
}

// TestSetRateKeepsFraction is issue 29's case: SetRate keeps the partial
// token accrued, as its doc says.
func TestSetRateKeepsFraction(t *testing.T) {
	clk := clockwork.NewFakeClock()
	b, err := throttle.New(2, throttle.Per(2, time.Second), throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.TryAcquire(2); !ok {
		t.Fatal("TryAcquire(2) refused on a full bucket")
	}
	clk.Advance(300 * time.Millisecond)
	if err := b.SetRate(throttle.Per(1, time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := b.Tokens(); got != 0.6 {
		t.Errorf("Tokens() = %v after SetRate, want the 0.6 accrued", got)
	}
	if w, err := b.WaitTime(1); err != nil || w != 400*time.Millisecond {
		t.Errorf("WaitTime(1) = %v, %v; want 400ms", w, err)
	}
	// A fraction the new rate cannot count exactly is rounded down to its
	// resolution: 3 ns at 1 a second is 3/10^9 of a token, and 2 a second
	// counts a token in 5·10^8 parts, so 1 of them, 2/10^9, is kept.
	b, err = throttle.New(2, throttle.Per(1, time.Second), throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	b.TryAcquire(2)
	clk.Advance(3 * time.Nanosecond)
	if err := b.SetRate(throttle.Per(2, time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, want := b.Tokens(), 1.0/5e8; got != want {
		t.Errorf("Tokens() = %v after SetRate, want %v", got, want)
	}
}
