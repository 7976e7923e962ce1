package budget_test

import (
	"testing"

	"github.com/throttlekit/throttle/budget"
	"github.com/throttlekit/throttle/budget/budgettest"
)

func TestMemoryConforms(t *testing.T) {
	budgettest.Store(t, func(*testing.T) budget.Store { return budget.NewMemory() })
}
