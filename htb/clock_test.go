package htb

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// TestLimiterClock: a Limiter's Clock is the one its classes were made on
// with WithClock, the real clock without it, and nil for the zero Limiter.
func TestLimiterClock(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	org, err := NewQuota(10, throttle.Per(10, time.Second), throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLimiter(org)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Clock(); got != clk {
		t.Errorf("Clock() = %v, want the fake clock given to NewQuota", got)
	}
	plain, err := NewQuota(10, throttle.Per(10, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := NewLimiter(plain); l.Clock() == nil || l.Clock() == clockwork.Clock(clk) {
		t.Errorf("without WithClock: Clock() = %v, want the real clock", l.Clock())
	}
	if got := new(Limiter).Clock(); got != nil {
		t.Errorf("zero Limiter: Clock() = %v, want nil", got)
	}
}
