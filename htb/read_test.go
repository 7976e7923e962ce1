package htb

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/exact"
)

// TestClassReadMovesNothing is issue 29's scenario: a read of the root's
// level between a waiter's arrival and its instant must not let the
// waiter through early, nor leave the hierarchy holding less than a class
// within its guarantee is owed.
func TestClassReadMovesNothing(t *testing.T) {
	for _, read := range []bool{false, true} {
		clk := newClock()
		root, err := NewQuota(20, throttle.Per(10, time.Second), throttle.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		a := mustClass(t, root, Config{Name: "a", Rate: throttle.Per(5, time.Second), Burst: 5})
		b := mustClass(t, root, Config{Name: "b", Rate: throttle.Per(5, time.Second), Burst: 5})
		mustTry(t, a, 5, true)
		mustTry(t, a, 10, true)
		if w, err := a.WaitTime(8); err != nil || w != 1300*time.Millisecond {
			t.Fatalf("WaitTime(8) = %v, %v; want 1.3s", w, err)
		}
		done := make(chan time.Duration, 1)
		go func() {
			if err := a.Acquire(context.Background(), 8); err != nil {
				t.Error(err)
			}
			done <- clk.Since(t0)
		}()
		waitClassQueued(t, a, 1)
		clk.Advance(1200 * time.Millisecond)
		if read {
			root.Tokens()
		}
		mustTry(t, b, 5, true)
		select {
		case at := <-done:
			t.Fatalf("read=%v: Acquire(8) returned at +%v, before +1.4s", read, at)
		default:
		}
		invariantsNoMove(t, root)
		clk.Advance(200 * time.Millisecond)
		if at := <-done; at != 1400*time.Millisecond {
			t.Fatalf("read=%v: Acquire(8) returned at +%v, want +1.4s", read, at)
		}
		invariantsNoMove(t, root)
	}
}

// invariantsNoMove checks, on copies of the levels so that the check moves
// nothing, that every class holds at least what its children hold.
func invariantsNoMove(t *testing.T, root *Class) {
	t.Helper()
	if err := holdsChildren(root); err != nil {
		t.Fatal(err)
	}
}

func holdsChildren(root *Class) (err error) {
	d := root.lock()
	defer d.Mu.Unlock()
	now := max(d.Now(), d.seen)
	var walk func(c *Class)
	walk = func(c *Class) {
		if len(c.kids) > 0 {
			l := c.gl
			c.g.Advance(&l, now)
			kl := make([]exact.Level, len(c.kids))
			for i, k := range c.kids {
				kl[i] = k.gl
				k.g.Advance(&kl[i], now)
			}
			if s := c.spareUnits(&l, func(i int) *exact.Level { return &kl[i] }); s.hi < 0 {
				err = fmt.Errorf("%s holds less than its children: %+v, children %+v", className(c), l, kl)
			}
		}
		for _, k := range c.kids {
			walk(k)
		}
	}
	walk(root)
	return err
}

// htbRun drives one random hierarchy through ops decisions drawn from
// seed; with reads set it also calls every getter of every class between
// any two decisions, from another random stream. It returns the trace of
// decisions and grants, which the reads must not change.
func htbRun(t *testing.T, seed uint64, ops int, reads bool) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 29))
	rrng := rand.New(rand.NewPCG(seed, 30))
	clk := newClock()
	// Rates whose token takes a fractional number of nanoseconds too.
	rates := []throttle.Rate{throttle.Per(7, time.Second), throttle.Per(10, time.Second), throttle.Per(3, 700*time.Millisecond), throttle.Per(100, time.Second)}
	rootRate := throttle.Per(rng.Int64N(40)+20, time.Second)
	root, err := NewQuota(rng.Int64N(30)+20, rootRate, throttle.WithClock(clk), throttle.WithName("root"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex // onGrant runs on the goroutine that serves
		trace  []string
		grants []string
	)
	log := func(format string, args ...any) {
		mu.Lock()
		trace = append(trace, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	d := root.d.Load()
	d.onGrant = func(cs []*Class, costs []int64, at int64) {
		// Apart from the decisions: a timer's goroutine can log a grant
		// before or after the next decision, which serves it otherwise.
		grants = append(grants, fmt.Sprintf("grant %s %d at %d", cs[0].name, costs[0], at))
	}
	all := []*Class{root}
	for i := range 2 + rng.IntN(4) {
		p := all[rng.IntN(len(all))]
		r := rates[rng.IntN(len(rates))]
		k, err := p.NewClass(Config{Name: fmt.Sprintf("c%d", i), Rate: r, Burst: rng.Int64N(8) + 1})
		if err == nil {
			all = append(all, k)
		}
	}
	started, returned := 0, make(chan struct{}, ops)
	done := 0
	type opPermit struct {
		op int
		p  throttle.Permit
	}
	var permits []opPermit // in the order of the calls, whatever order they return in
	permitc := make(chan opPermit, ops)
	settle := func() {
		// Wait until every waiter granted has returned, so that the next
		// decision sees the same permits in both runs.
		for {
			d := root.lock()
			q := d.queued
			d.Mu.Unlock()
			for len(returned) > 0 {
				<-returned
				done++
			}
			if started-done == q {
				break
			}
			runtime.Gosched()
		}
		for len(permitc) > 0 {
			permits = append(permits, <-permitc)
		}
		slices.SortFunc(permits, func(a, b opPermit) int { return a.op - b.op })
	}
	read := func() {
		if !reads {
			return
		}
		for _, c := range all {
			c.Tokens()
			c.Capacity()
			c.WaitTime(rrng.Int64N(c.g.Cap) + 1)
		}
	}
	for op := range ops {
		c := all[rng.IntN(len(all))]
		n := rng.Int64N(c.g.Cap) + 1
		read()
		switch rng.IntN(7) {
		case 0, 1:
			ok, err := c.TryAcquire(n)
			log("%d try %s %d: %v %v", op, c.name, n, ok, err)
		case 2:
			// A class within its guarantee finds its tokens: what its own
			// bucket holds, nobody queued in it, is granted at once.
			cd := c.lock()
			now := max(cd.Now(), cd.seen)
			cd.changed(now) // as TryAcquire does first: the waiters due take theirs
			l := c.gl
			c.g.Advance(&l, now)
			own := l.Tokens
			for _, k := range c.kids {
				kl := k.gl
				k.g.Advance(&kl, now)
				own -= kl.Tokens + 1 // whole tokens: a child's fraction rounds up
			}
			free := c.Head == nil
			cd.Mu.Unlock()
			if free && own >= 1 {
				m := min(own, c.g.Cap)
				if ok, err := c.TryAcquire(m); !ok || err != nil {
					t.Fatalf("seed %d op %d (reads %v): %s holds %d of its own guarantee, TryAcquire(%d) = %v, %v", seed, op, reads, c.name, own, m, ok, err)
				}
				log("%d own %s %d", op, c.name, m)
			}
		case 3, 4:
			if len(c.kids) > 0 {
				// A parent's spare may never cover n; a leaf's guarantee
				// always does in the end.
				break
			}
			log("%d acquire %s %d", op, c.name, n)
			started++
			go func() {
				if rng := n % 2; rng == 0 {
					if err := c.Acquire(context.Background(), n); err != nil {
						t.Error(err)
					}
				} else if p, err := c.AcquirePermit(context.Background(), n); err == nil {
					permitc <- opPermit{op, p}
				} else {
					t.Error(err)
				}
				returned <- struct{}{}
			}()
			// Queued or returned before the next decision.
			for {
				cd := c.lock()
				q := cd.queued
				cd.Mu.Unlock()
				if q == started-done-len(returned) {
					break
				}
				runtime.Gosched()
			}
		case 5:
			dt := time.Duration(rng.Int64N(int64(400 * time.Millisecond)))
			log("%d advance %v", op, dt)
			clk.Advance(dt)
		case 6:
			// Which permits exist must not depend on whether a timer's
			// goroutine has run: serve what is due, as Settle does first.
			cd := c.lock()
			cd.serve(max(cd.Now(), cd.seen))
			cd.Mu.Unlock()
			settle()
			if len(permits) > 0 {
				i := rng.IntN(len(permits))
				p := permits[i].p.(*Permit)
				permits = slices.Delete(permits, i, i+1)
				actual := rng.Int64N(p.costs[0] + 1) // a refund, so a guarantee stays owed
				err := p.Settle(actual)
				log("%d settle %s %d/%d: %v", op, p.cs[0].name, actual, p.costs[0], err)
			}
		}
		settle()
		read()
		if err := holdsChildren(root); err != nil {
			t.Fatalf("seed %d op %d (reads %v): %v; trace ends %s", seed, op, reads, err, strings.Join(trace[max(0, len(trace)-8):], "; "))
		}
	}
	// Drain: every waiter is eventually granted.
	for started > done {
		clk.Advance(time.Second)
		settle()
	}
	d = root.lock()
	d.onGrant = nil
	d.Mu.Unlock()
	// Grants are in the order of their instants, ties in the order served.
	return append(trace, grants...)
}

// TestPropertyClassReads runs random hierarchies twice, once with every
// getter called between any two decisions, and wants the same decisions
// and grants at the same instants; in both runs every parent holds at
// least what its children hold, and a class finds what its own guarantee
// holds.
func TestPropertyClassReads(t *testing.T) {
	seeds, ops := 300, 120
	if testing.Short() {
		seeds = 60
	}
	for seed := range uint64(seeds) {
		plain := htbRun(t, seed, ops, false)
		read := htbRun(t, seed, ops, true)
		if !slices.Equal(plain, read) {
			for i := range min(len(plain), len(read)) {
				if plain[i] != read[i] {
					t.Fatalf("seed %d: reads changed decision %d:\nwithout reads: %s\nwith reads:    %s\n(before: %s)", seed, i, plain[i], read[i], strings.Join(plain[max(0, i-6):i], "; "))
				}
			}
			t.Fatalf("seed %d: reads changed the number of decisions: %d against %d", seed, len(read), len(plain))
		}
	}
}
