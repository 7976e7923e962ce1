package hoststore_test

import (
	"path/filepath"
	"testing"

	"github.com/throttlekit/throttle/budget"
	"github.com/throttlekit/throttle/budget/budgettest"
)

// TestStoreConforms runs the budget stores' suite on a host's file,
// through a second handle as a second process would.
func TestStoreConforms(t *testing.T) {
	budgettest.Store(t, func(t *testing.T) budget.Store {
		path := filepath.Join(t.TempDir(), "budgets")
		open(t, path)
		return open(t, path)
	})
}
