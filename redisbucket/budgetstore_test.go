package redisbucket_test

import (
	"testing"

	"github.com/throttlekit/throttle/budget"
	"github.com/throttlekit/throttle/budget/budgettest"
	"github.com/throttlekit/throttle/redisbucket"
	"github.com/throttlekit/throttle/redisbucket/internal/redistest"
)

// TestBudgetStoreConforms runs the budget stores' suite on Redis.
func TestBudgetStoreConforms(t *testing.T) {
	budgettest.Store(t, func(t *testing.T) budget.Store {
		be := redistest.New(t)
		return redisbucket.NewBudgetStore(be.Client(), be.Prefix)
	})
}
