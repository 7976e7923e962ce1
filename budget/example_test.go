package budget_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/throttlekit/throttle/budget"
)

// A daily cap in money per model: reserve the prompt and max_tokens at the
// model's prices before the call, settle what the response's usage cost.
func Example() {
	prices := budget.Prices{"claude-opus-4*": {Input: 15_000_000, CachedInput: 1_500_000, Output: 75_000_000}}
	la, _ := time.LoadLocation("America/Los_Angeles")
	perModel, err := budget.New("llm-usd-micros", 50_000_000, budget.Daily(la)) // $50 a day
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	model := "claude-opus-4-20250514"

	estimate, _ := prices.Cost(budget.Usage{Model: model, Input: 2_000, Output: 4_096})
	p, err := perModel.For(model).Acquire(ctx, estimate)
	var spent *budget.SpentError
	if errors.As(err, &spent) {
		fmt.Println("spent until", spent.Resets)
		return
	}
	// … the call; its response reports its usage:
	actual, _ := prices.Cost(budget.Usage{Model: model, Input: 500, CachedInput: 1_500, Output: 800})
	_ = p.Settle(actual)
	fmt.Printf("reserved %d, charged %d micro-dollars\n", estimate, actual)
	// Output: reserved 337200, charged 69750 micro-dollars
}
