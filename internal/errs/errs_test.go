package errs

import (
	"errors"
	"sync/atomic"
	"testing"
)

// TestWording: the count and no-limits errors match InvalidCost and say
// what was given, in the singular or plural as the numbers need.
func TestWording(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{CostCount(1, 2, "bucket"), "throttle: invalid cost: got 1 cost for 2 buckets"},
		{CostCount(3, 1, "class"), "throttle: invalid cost: got 3 costs for 1 class"},
		{CostCount(0, 2, "class"), "throttle: invalid cost: got 0 costs for 2 classes"},
		{NoLimits(1, "htb.Limiter", "htb.NewLimiter"), "throttle: invalid cost: got 1 cost for the 0 limits of a zero htb.Limiter (make one with htb.NewLimiter)"},
	} {
		if !errors.Is(tc.err, InvalidCost) || tc.err.Error() != tc.want {
			t.Errorf("%v, want %q matching InvalidCost", tc.err, tc.want)
		}
	}
}

// TestSettling: a wrong number of values and a negative one fail without
// marking the permit settled; the first valid call marks it, and any call
// after that fails with Settled.
func TestSettling(t *testing.T) {
	var settled atomic.Bool
	count := func(got, want int) error { return CostCount(got, want, "bucket") }
	if err := Settling(&settled, []int64{1}, 2, count); !errors.Is(err, InvalidCost) || settled.Load() {
		t.Fatalf("one value for two limits: %v, settled %v", err, settled.Load())
	}
	if err := Settling(&settled, []int64{1, -1}, 2, count); err != NegativeCost || settled.Load() {
		t.Fatalf("a negative value: %v, settled %v", err, settled.Load())
	}
	if err := Settling(&settled, []int64{1, 0}, 2, count); err != nil || !settled.Load() {
		t.Fatalf("valid values: %v, settled %v", err, settled.Load())
	}
	if err := Settling(&settled, []int64{1, 0}, 2, count); err != Settled {
		t.Fatalf("settled twice: %v, want Settled", err)
	}
}
