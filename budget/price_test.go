package budget_test

import (
	"errors"
	"testing"

	"github.com/throttlekit/throttle/budget"
)

func TestPricesCostTokenKindsApartAndByModel(t *testing.T) {
	p := budget.Prices{
		"claude-opus-4*":   {Input: 15_000_000, CachedInput: 1_500_000, Output: 75_000_000},
		"claude-opus-4-1*": {Input: 20_000_000, Output: 80_000_000},
		"gpt-4o-mini":      {Input: 150_000, CachedInput: 75_000, Output: 600_000},
	}
	for _, c := range []struct {
		u    budget.Usage
		want int64
	}{
		// 1000 × 15 + 2000 × 1.5 + 500 × 75 = 15000 + 3000 + 37500 micro-dollars.
		{budget.Usage{Model: "claude-opus-4-20250514", Input: 1000, CachedInput: 2000, Output: 500}, 55_500},
		// The longer prefix wins.
		{budget.Usage{Model: "claude-opus-4-1-x", Input: 1000, Output: 1000}, 100_000},
		// 1 token at 0.15 micro-dollars rounds up to 1.
		{budget.Usage{Model: "gpt-4o-mini", Input: 1}, 1},
		{budget.Usage{Model: "gpt-4o-mini", Input: 1_000_000, CachedInput: 1_000_000, Output: 1_000_000}, 825_000},
	} {
		got, err := p.Cost(c.u)
		if err != nil || got != c.want {
			t.Errorf("Cost(%+v) = %d, %v, want %d", c.u, got, err, c.want)
		}
	}
	if _, err := p.Cost(budget.Usage{Model: "gpt-4o"}); !errors.Is(err, budget.ErrUnknownModel) {
		t.Errorf("an unpriced model: %v, want ErrUnknownModel", err)
	}
	if _, err := p.Cost(budget.Usage{Model: "claude-opus-4", Input: 1 << 62, Output: 1 << 62}); err == nil {
		t.Error("an overflowing cost gave no error")
	}
	if _, err := p.Cost(budget.Usage{Model: "gpt-4o-mini", Input: -1}); err == nil {
		t.Error("a negative count gave no error")
	}
}
