package benchmarks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/throttlekit/throttle/budget"
	"github.com/throttlekit/throttle/hoststore"
)

// TestBudgetKill kills -9 eight processes spending one budget in a host's
// store at a random point of their run (20 to 200ms after the first spend),
// ten times, and checks after each
// kill that the spend in the file exceeds what the processes journaled as
// settled by no more than the reservations they had in flight, and that a
// restarted process reads it back at once. Real time, bounded.
func TestBudgetKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "budgets")
	r := rand.New(rand.NewPCG(40, 40))
	var backs []time.Duration
	var worstErr, worstBound int64
	for round := range 10 {
		key := fmt.Sprintf("round%d", round)
		cmds, journals := budgetChildren(t, 8, path, dir, key, 1<<40, round)
		waitSpending(t, path, key)
		run := time.NewTimer(time.Duration(20+r.IntN(180)) * time.Millisecond)
		<-run.C
		for _, c := range cmds {
			c.Process.Kill()
		}
		for _, c := range cmds {
			c.Wait()
		}
		killed := time.Now()
		s, err := hoststore.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		bg, err := budget.New("usd", 1<<40, budget.Daily(time.UTC), budget.WithStore(s))
		if err != nil {
			t.Fatal(err)
		}
		st := bg.For(key).Status(nil)[0]
		backs = append(backs, time.Since(killed))
		s.Close()
		spent := int64(1<<40) - st.Remaining
		var settled, inFlight int64
		for _, j := range journals {
			a, f := readJournal(t, j)
			settled, inFlight = settled+a, inFlight+f
		}
		diff := spent - settled
		if diff < 0 || diff > inFlight {
			t.Errorf("round %d: the file says %d spent, the journals %d settled with %d reserved in flight", round, spent, settled, inFlight)
		}
		if diff > worstErr {
			worstErr, worstBound = diff, inFlight
		}
	}
	slices.Sort(backs)
	t.Logf("10 kills of 8 processes: worst accounting error %d (reservations in flight then: %d); state back in median %v, max %v",
		worstErr, worstBound, backs[len(backs)/2], backs[len(backs)-1])
	if backs[len(backs)-1] > 100*time.Millisecond {
		t.Errorf("state back in %v, want under 100ms", backs[len(backs)-1])
	}
}

// waitSpending returns once key has a spend, so that every kill falls
// in the processes' spending, not in their start-up. Bounded: 10s.
func waitSpending(t *testing.T, path, key string) {
	t.Helper()
	day, _ := budget.Daily(time.UTC).Bounds(time.Now())
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for range 5000 {
		s, err := hoststore.Open(path)
		if err == nil {
			spent, _ := s.Spent(context.Background(), "usd/"+key, day)
			s.Close()
			if spent > 0 {
				return
			}
		}
		<-tick.C
	}
	t.Fatalf("no spend on %s after 10s", key)
}

// TestBudgetMoneyCap has eight processes spend one capped budget until it
// refuses them: the spend ends at most the cap (every actual is within its
// reservation, as output within max_tokens is), and every process stopped
// at its first refusal.
func TestBudgetMoneyCap(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "budgets")
	const limit = 200_000
	cmds, journals := budgetChildren(t, 8, path, dir, "cap", limit, 99)
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	s, err := hoststore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	day, _ := budget.Daily(time.UTC).Bounds(time.Now())
	spent, err := s.Spent(context.Background(), "usd/cap", day)
	if err != nil {
		t.Fatal(err)
	}
	var settled int64
	for _, j := range journals {
		a, f := readJournal(t, j)
		settled += a
		if f != 0 {
			t.Errorf("%s ends with a call in flight", j)
		}
	}
	t.Logf("cap %d: spent %d, overshoot %d, journals settled %d", limit, spent, max(0, spent-limit), settled)
	if spent > limit || spent != settled {
		t.Errorf("spent %d of a cap of %d, journals %d", spent, limit, settled)
	}
}
