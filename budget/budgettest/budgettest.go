// Package budgettest is the conformance suite of budget.Store: what every
// store of spend keeps, in memory, in a host's file or in Redis.
package budgettest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlekit/throttle/budget"
)

// NewStore makes an empty Store for one subtest of Store.
type NewStore func(t *testing.T) budget.Store

// Store runs the suite on the stores newStore makes: reservations within
// the limit and never past it, settlements whatever the limit, refunds
// never below zero, windows that start afresh and close, listing and
// resetting keys, and exactness under concurrent reservations.
func Store(t *testing.T, newStore NewStore) {
	t.Run("reserve", func(t *testing.T) { reserve(t, newStore(t)) })
	t.Run("adjust", func(t *testing.T) { adjust(t, newStore(t)) })
	t.Run("windows", func(t *testing.T) { windows(t, newStore(t)) })
	t.Run("entries", func(t *testing.T) { entries(t, newStore(t)) })
	t.Run("exact", func(t *testing.T) { exact(t, newStore(t)) })
}

var day = time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)

func reserve(t *testing.T, s budget.Store) {
	ctx := t.Context()
	for _, c := range []struct {
		cost, spent int64
		ok          bool
	}{{60, 60, true}, {41, 60, false}, {40, 100, true}, {1, 100, false}} {
		spent, ok, err := s.Reserve(ctx, "b/k", day, c.cost, 100)
		if err != nil || spent != c.spent || ok != c.ok {
			t.Fatalf("Reserve(%d of 100) = %d, %v, %v, want %d, %v", c.cost, spent, ok, err, c.spent, c.ok)
		}
	}
	if spent, err := s.Spent(ctx, "b/k", day); spent != 100 || err != nil {
		t.Errorf("Spent = %d, %v, want 100", spent, err)
	}
	if spent, err := s.Spent(ctx, "b/other", day); spent != 0 || err != nil {
		t.Errorf("Spent of an unused key = %d, %v, want 0", spent, err)
	}
}

func adjust(t *testing.T, s budget.Store) {
	ctx := t.Context()
	if _, _, err := s.Reserve(ctx, "b/k", day, 50, 100); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ delta, want int64 }{{-20, 30}, {90, 120}, {-500, 0}} {
		if spent, err := s.Adjust(ctx, "b/k", day, c.delta); spent != c.want || err != nil {
			t.Fatalf("Adjust(%+d) = %d, %v, want %d", c.delta, spent, err, c.want)
		}
	}
}

func windows(t *testing.T, s budget.Store) {
	ctx := t.Context()
	next := day.AddDate(0, 0, 1)
	if _, _, err := s.Reserve(ctx, "b/k", day, 100, 100); err != nil {
		t.Fatal(err)
	}
	if spent, ok, err := s.Reserve(ctx, "b/k", next, 70, 100); !ok || spent != 70 || err != nil {
		t.Fatalf("the next window's Reserve = %d, %v, %v, want a fresh 70", spent, ok, err)
	}
	// A permit of the closed window settles to nothing.
	if _, err := s.Adjust(ctx, "b/k", day, 50); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Reserve(ctx, "b/k", day, 1, 100); ok {
		t.Error("a reservation in a closed window")
	}
	if spent, err := s.Spent(ctx, "b/k", next); spent != 70 || err != nil {
		t.Errorf("Spent = %d, %v after the closed window's settlement, want 70", spent, err)
	}
}

func entries(t *testing.T, s budget.Store) {
	ctx := t.Context()
	for _, k := range []string{"b/z", "b/a", "c"} {
		if _, _, err := s.Reserve(ctx, k, day, int64(len(k)), 100); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Reset(ctx, "b/z"); err != nil {
		t.Fatal(err)
	}
	es, err := s.Entries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var keys []string
	for _, e := range es {
		got[e.Key] = e.Spent
		keys = append(keys, e.Key)
		if e.Key != "b/z" && !e.Window.Equal(day) {
			t.Errorf("%s's window = %v, want %v", e.Key, e.Window, day)
		}
	}
	if got["b/a"] != 3 || got["c"] != 1 || got["b/z"] != 0 {
		t.Errorf("Entries = %+v", es)
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Errorf("Entries not sorted by key: %q", keys)
		}
	}
	if spent, ok, err := s.Reserve(ctx, "b/z", day, 100, 100); !ok || spent != 100 || err != nil {
		t.Errorf("after Reset, Reserve(100 of 100) = %d, %v, %v", spent, ok, err)
	}
}

func exact(t *testing.T, s budget.Store) {
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, ok, err := s.Reserve(t.Context(), "b/k", day, 1, 500)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					granted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := granted.Load(); n != 500 {
		t.Errorf("%d of 800 reservations granted on a limit of 500", n)
	}
}
