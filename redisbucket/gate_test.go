package redisbucket_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

var (
	_ throttle.Gate  = (*redisbucket.Limiter)(nil)
	_ throttle.Meter = (*redisbucket.Limiter)(nil)
)

// TestLimiterIsAGate runs a shared Limiter through the contract the core's
// Gates keep (TestGateContract in the root package): requests 5 at 5 a
// second and tokens 100 at 100 a second.
func TestLimiterIsAGate(t *testing.T) {
	limits := []redisbucket.Limit{
		{Name: "requests", Capacity: 5, Rate: throttle.Per(5, time.Second)},
		{Name: "tokens", Capacity: 100, Rate: throttle.Per(100, time.Second)},
	}
	r := newRig(t)
	var g throttle.Gate = r.limiter("gate", limits)
	if got := g.Limits(); !slices.Equal(got, limits) {
		t.Errorf("Limits() = %v, want %v", got, limits)
	}
	p, ok, err := g.TryAcquirePermit(5, 40)
	if !ok || err != nil || !slices.Equal(p.Costs(), []int64{5, 40}) {
		t.Fatalf("TryAcquirePermit(5, 40) = %v, %v, %v", p, ok, err)
	}
	if q, ok, err := g.TryAcquirePermit(1, 0); q != nil || ok || err != nil {
		t.Errorf("TryAcquirePermit(1, 0) with no request left = %v, %v, %v", q, ok, err)
	}
	if d, err := g.WaitTime(1, 0); d != 200*time.Millisecond || err != nil {
		t.Errorf("WaitTime(1, 0) = %v, %v; want 200ms", d, err)
	}
	r.advance(100 * time.Millisecond)
	want := []throttle.LimitStatus{
		{Name: "requests", Capacity: 5, Rate: throttle.Per(5, time.Second), Remaining: 0, Reset: 900 * time.Millisecond},
		{Name: "tokens", Capacity: 100, Rate: throttle.Per(100, time.Second), Remaining: 70, Reset: 300 * time.Millisecond},
	}
	if got := g.(throttle.Meter).Status(nil); !slices.Equal(got, want) {
		t.Errorf("Status() =\n%v\nwant\n%v", got, want)
	}
	// Settling gives back 3 requests and 20 tokens.
	if err := p.Settle(2, 20); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := g.TryAcquirePermit(3, 0); !ok {
		t.Error("the requests settled back were not there")
	}
	if err := p.Cancel(); !errors.Is(err, throttle.ErrSettled) {
		t.Errorf("Cancel after Settle: %v, want ErrSettled", err)
	}
	if _, _, err := g.TryAcquirePermit(1); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Errorf("one cost for two limits: %v, want ErrCostCount", err)
	}
}
