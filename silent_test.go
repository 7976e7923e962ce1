package throttle_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// TestSettleAbsurdIsCapped: a usage figure that is garbage must not lock a
// limit for centuries. Settle(1e12) on a limit of 10,000 leaves it one
// capacity in debt (full again after two windows), says so, and settles.
func TestSettleAbsurdIsCapped(t *testing.T) {
	clk := clockwork.NewFakeClock()
	tok, err := throttle.New(10_000, throttle.Per(10_000, time.Minute), throttle.WithClock(clk), throttle.WithName("tokens"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := throttle.NewLimiter(tok)
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.Acquire(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Settle(1_000_000_000_000)
	if !errors.Is(err, throttle.ErrCostExceedsCapacity) || !strings.Contains(err.Error(), `"tokens"`) {
		t.Fatalf("Settle(1e12) = %v, want ErrCostExceedsCapacity naming the limit", err)
	}
	if err := p.Cancel(); !errors.Is(err, throttle.ErrSettled) {
		t.Fatalf("the permit is not settled after a capped Settle: Cancel = %v", err)
	}
	if st := tok.Status(); st.Remaining != 0 || st.Reset != 2*time.Minute {
		t.Fatalf("after Settle(1e12): %+v, want 0 left and full in 2m (one capacity of debt)", st)
	}
	// An overrun within one capacity of debt is an ordinary settlement.
	clk.Advance(2 * time.Minute)
	p, _ = l.Acquire(t.Context(), 100)
	if err := p.Settle(15_000); err != nil {
		t.Fatalf("Settle(15,000) on a full limit of 10,000: %v", err)
	}
}

// TestWithClockNil: a nil clock is refused, not taken as the real one.
func TestWithClockNil(t *testing.T) {
	if _, err := throttle.New(1, throttle.Per(1, time.Second), throttle.WithClock(nil)); !errors.Is(err, throttle.ErrInvalidOption) || !strings.Contains(err.Error(), "WithClock(nil)") {
		t.Fatalf("WithClock(nil): %v, want ErrInvalidOption naming it", err)
	}
}

// TestZeroPeriodRefused: a period of zero is an error, never unlimited.
func TestZeroPeriodRefused(t *testing.T) {
	for _, r := range []throttle.Rate{throttle.Per(60, 0), throttle.Per(60, -time.Second), {}} {
		if b, err := throttle.New(10, r); err == nil {
			t.Fatalf("New(10, %v) = %v, nil; want an error", r, b)
		}
	}
}

func TestRateString(t *testing.T) {
	for _, c := range []struct {
		r    throttle.Rate
		want string
	}{
		{throttle.Per(60, time.Minute), "60/min"},
		{throttle.Per(1, time.Minute), "1/min"},
		{throttle.Per(500, time.Minute), "500/min"},
		{throttle.Per(1, 100*time.Millisecond), "10/s"},
		{throttle.Per(1173, 1000*time.Second), "1.173/s"},
		{throttle.Per(3, 3600*time.Second), "3/h"},
		{throttle.Per(10_000, 24*time.Hour), "10000/day"},
		{throttle.Per(1, 333*time.Millisecond), "3.003/s"},
		{throttle.Per(1, 7*time.Millisecond), "142.857/s"},
		{throttle.Per(1, 48*time.Hour), "1/48h0m0s"},
		{throttle.Per(0, time.Second), "0/s"},
		{throttle.Inf, "Inf"},
		{throttle.Per(1, 0), "invalid: 1/0s"},
	} {
		if got := c.r.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.r, got, c.want)
		}
	}
}
