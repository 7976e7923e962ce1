package benchmarks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlekit/throttle/budget"
	"github.com/throttlekit/throttle/hoststore"
)

// BenchmarkBudgetSpent measures how long a spent budget takes to refuse a
// call with its *SpentError (reset time included), in memory and in a
// host's store file.
func BenchmarkBudgetSpent(b *testing.B) {
	for _, impl := range []string{"memory", "hoststore"} {
		b.Run(impl, func(b *testing.B) {
			var opts []budget.Option
			if impl == "hoststore" {
				s, err := hoststore.Open(filepath.Join(b.TempDir(), "budgets"))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				opts = append(opts, budget.WithStore(s))
			}
			bg, err := budget.New("usd", 1000, budget.Daily(time.UTC), opts...)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if _, err := bg.Acquire(ctx, 1000); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			took := make([]time.Duration, 0, b.N)
			for range b.N {
				start := time.Now()
				_, err := bg.Acquire(ctx, 1)
				took = append(took, time.Since(start))
				var se *budget.SpentError
				if !errors.As(err, &se) || se.Resets.IsZero() {
					b.Fatalf("Acquire on a spent budget = %v", err)
				}
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
}

// envBudgetChild makes the benchmark binary a process spending a budget in
// a host's store for TestBudgetKill: "path key journal limit seed".
const envBudgetChild = "THROTTLE_BENCH_BUDGET_CHILD"

// runBudgetChild spends until killed, or until the budget is spent: each
// call reserves an estimate E (1 to 100), settles an actual at most E,
// and journals "R E" before the reservation and "S A" after the
// settlement ("X" for a refusal), each line one write(2), which a kill -9
// cannot cut.
func runBudgetChild(v string) {
	var path, key, journal string
	var limit int64
	var seed uint64
	if _, err := fmt.Sscan(v, &path, &key, &journal, &limit, &seed); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s, err := hoststore.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bg, err := budget.New("usd", limit, budget.Daily(time.UTC), budget.WithStore(s))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	j, err := os.OpenFile(journal, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r := rand.New(rand.NewPCG(seed, seed))
	for {
		e := 1 + r.Int64N(100)
		fmt.Fprintf(j, "R %d\n", e)
		p, err := bg.For(key).Acquire(context.Background(), e)
		var se *budget.SpentError
		if errors.As(err, &se) {
			fmt.Fprintf(j, "X\n")
			os.Exit(0)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		a := r.Int64N(e + 1)
		if err := p.Settle(a); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(j, "S %d\n", a)
	}
}

// readJournal returns the sum of the settled actuals and the estimate of
// the call in flight at the end (0 if none).
func readJournal(t *testing.T, path string) (settled, inFlight int64) {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0 // killed before it opened its journal
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kind, n, _ := strings.Cut(sc.Text(), " ")
		v, _ := strconv.ParseInt(n, 10, 64)
		switch kind {
		case "R":
			inFlight = v
		case "S":
			settled += v
			inFlight = 0
		case "X":
			inFlight = 0
		}
	}
	return settled, inFlight
}

// budgetChildren starts n spending processes on key, each journaling to
// dir/journal-key-i.
func budgetChildren(t *testing.T, n int, path, dir, key string, limit int64, round int) ([]*exec.Cmd, []string) {
	t.Helper()
	var cmds []*exec.Cmd
	var journals []string
	for i := range n {
		j := filepath.Join(dir, fmt.Sprintf("journal-%s-%d", key, i))
		cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s %d %d", envBudgetChild, path, key, j, limit, round*100+i+1))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		cmds = append(cmds, cmd)
		journals = append(journals, j)
	}
	return cmds, journals
}
