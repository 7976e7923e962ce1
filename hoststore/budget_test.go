package hoststore_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle/budget"
	"github.com/throttlekit/throttle/hoststore"
)

// TestBudgetSurvivesARestart spends through one handle, closes it as a
// process that exits does, and finds the spend through a new one.
func TestBudgetSurvivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "budgets")
	clk := clockwork.NewFakeClockAt(t0)
	newBudget := func(s *hoststore.Store) *budget.Budget {
		b, err := budget.New("calls", 100, budget.Daily(time.UTC), budget.WithStore(s), budget.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		return b.For("tenant-a")
	}
	first, err := hoststore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	b := newBudget(first)
	p, err := b.Acquire(t.Context(), 40)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(75); err != nil {
		t.Fatal(err)
	}
	first.Close()

	second := open(t, path)
	b = newBudget(second)
	var se *budget.SpentError
	if _, err := b.Acquire(t.Context(), 26); !errors.As(err, &se) || se.Spent != 75 || se.Key != "tenant-a" {
		t.Fatalf("after the restart, 26 more of 100 = %v, want a SpentError at 75", err)
	}
	entries, err := second.Entries(t.Context())
	if err != nil || len(entries) != 1 || entries[0].Key != "calls/tenant-a" || entries[0].Spent != 75 {
		t.Errorf("Entries = %+v, %v", entries, err)
	}
	if err := second.Reset(t.Context(), "calls/tenant-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(t.Context(), 100); err != nil {
		t.Errorf("after Reset: %v", err)
	}
	clk.Advance(12 * time.Hour) // the next day
	if _, err := b.Acquire(t.Context(), 100); err != nil {
		t.Errorf("the next day: %v", err)
	}
}

func TestKeysOfOneKindOnly(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "store"))
	l := newLimiter(t, s, clockwork.NewFakeClockAt(t0))
	if _, ok, err := l.TryAcquirePermit(1); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, _, err := s.Reserve(t.Context(), "github", t0, 1, 10); err == nil {
		t.Error("a budget reserved on a limiter's key")
	}
	if _, _, err := s.Reserve(t.Context(), string(make([]byte, 81)), t0, 1, 10); err == nil {
		t.Error("a key of 81 bytes was taken")
	}
}
