package htb

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/testwait"
)

// classQueued returns the number of waiters in c's queue.
func classQueued(c *Class) int {
	d := c.lock()
	defer d.Mu.Unlock()
	n := 0
	for e := c.Head; e != nil; e = e.Next {
		n++
	}
	return n
}

func waitClassQueued(t *testing.T, c *Class, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for classQueued(c) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d queued, want %d", c.name, classQueued(c), n)
		}
		runtime.Gosched()
	}
}

func mustClass(t *testing.T, p *Class, cfg Config) *Class {
	t.Helper()
	c, err := p.NewClass(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustTry(t *testing.T, c *Class, cost int64, want bool) {
	t.Helper()
	ok, err := c.TryAcquire(cost)
	if err != nil {
		t.Fatalf("%s.TryAcquire(%d): %v", c.name, cost, err)
	}
	if ok != want {
		t.Fatalf("%s.TryAcquire(%d) = %v, want %v", c.name, cost, ok, want)
	}
}

// newPair is a quota of 100 a second, burst 100, with two classes
// guaranteed 50 a second each, burst 50: no spare while both are full.
func newPair(t *testing.T) (*clockwork.FakeClock, *Class, *Class, *Class) {
	clk := newClock()
	root, err := NewQuota(100, throttle.Per(100, time.Second), throttle.WithClock(clk), throttle.WithName("org"))
	if err != nil {
		t.Fatal(err)
	}
	a := mustClass(t, root, Config{Name: "a", Rate: throttle.Per(50, time.Second)})
	b := mustClass(t, root, Config{Name: "b", Rate: throttle.Per(50, time.Second)})
	return clk, root, a, b
}

func TestClassValidation(t *testing.T) {
	clk := newClock()
	root, err := NewQuota(100, throttle.Per(100, time.Second), throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewQuota(100, throttle.Per(0, time.Second)); err == nil {
		t.Error("a quota that never refills accepted")
	}
	bad := []Config{
		{Name: "zero", Rate: throttle.Per(0, time.Second)},
		{Name: "above parent", Rate: throttle.Per(101, time.Second)},
		{Name: "burst above parent", Rate: throttle.Per(10, time.Second), Burst: 101},
		{Name: "ceil below rate", Rate: throttle.Per(10, time.Second), Ceil: throttle.Per(5, time.Second)},
		{Name: "ceil above parent", Rate: throttle.Per(10, time.Second), Ceil: throttle.Per(200, time.Second)},
		{Name: "ceil burst below burst", Rate: throttle.Per(10, time.Second), Burst: 20, CeilBurst: 10},
	}
	for _, cfg := range bad {
		if _, err := root.NewClass(cfg); err == nil {
			t.Errorf("%s: accepted", cfg.Name)
		}
	}
	a := mustClass(t, root, Config{Name: "a", Rate: throttle.Per(3000, time.Minute)}) // 50/s
	if got := a.g.Cap; got != 50 {
		t.Errorf("default burst %d, want the share 50", got)
	}
	mustClass(t, root, Config{Name: "b", Rate: throttle.Per(40, time.Second)})
	if _, err := root.NewClass(Config{Name: "c", Rate: throttle.Per(11, time.Second)}); err == nil {
		t.Error("guarantees above the parent's accepted")
	}
	mustClass(t, root, Config{Name: "c", Rate: throttle.Per(10, time.Second), Burst: 10})
	if _, err := a.TryAcquire(101); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
		t.Errorf("cost above the quota: %v", err)
	}
	if _, err := a.TryAcquire(0); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Errorf("zero cost: %v", err)
	}
}

func TestClassOwnThenBorrow(t *testing.T) {
	clk, root, a, b := newPair(t)
	mustTry(t, a, 50, true) // a's own guarantee
	mustTry(t, a, 1, false) // b's 50 are b's: the root has no spare
	if got := root.Tokens(); got != 50 {
		t.Fatalf("root %v, want 50", got)
	}
	// In 100 ms the root gains 10 and a 5; b, full, gains nothing, so the
	// 5 b was guaranteed become the root's spare.
	clk.Advance(100 * time.Millisecond)
	mustTry(t, a, 6, false) // 5 own + 5 spare, but a grant comes from one lender
	mustTry(t, a, 5, true)  // own
	mustTry(t, a, 5, true)  // borrowed
	mustTry(t, a, 1, false)
	// b still has its whole guarantee.
	mustTry(t, b, 50, true)
	mustTry(t, b, 1, false)
	if got := root.Tokens(); got != 0 {
		t.Fatalf("root %v, want 0", got)
	}
}

func TestClassCeiling(t *testing.T) {
	clk := newClock()
	root, _ := NewQuota(100, throttle.Per(100, time.Second), throttle.WithClock(clk))
	a := mustClass(t, root, Config{Name: "a", Rate: throttle.Per(20, time.Second), Burst: 20, Ceil: throttle.Per(30, time.Second), CeilBurst: 30})
	mustTry(t, a, 20, true)
	mustTry(t, a, 10, true) // borrowed, up to the ceiling burst
	mustTry(t, a, 1, false) // the ceiling is empty, the root is not
	if got := root.Tokens(); got != 70 {
		t.Fatalf("root %v, want 70", got)
	}
	clk.Advance(time.Second)
	// A second later a's ceiling holds 30, its guarantee 20.
	mustTry(t, a, 20, true)
	mustTry(t, a, 10, true)
	mustTry(t, a, 1, false)
}

// TestClassDepth2 borrows from the parent first, then the grandparent.
func TestClassDepth2(t *testing.T) {
	clk := newClock()
	root, _ := NewQuota(100, throttle.Per(100, time.Second), throttle.WithClock(clk))
	team := mustClass(t, root, Config{Name: "team", Rate: throttle.Per(60, time.Second)})
	other := mustClass(t, root, Config{Name: "other", Rate: throttle.Per(40, time.Second)})
	x := mustClass(t, team, Config{Name: "x", Rate: throttle.Per(20, time.Second), Burst: 20})
	y := mustClass(t, team, Config{Name: "y", Rate: throttle.Per(20, time.Second), Burst: 20})
	// team: 60 tokens, 40 held for x and y: a spare of 20.
	mustTry(t, x, 20, true) // own
	mustTry(t, x, 20, true) // the team's spare
	mustTry(t, x, 1, false) // the root has no spare: other holds its 40
	mustTry(t, y, 20, true) // y's guarantee untouched
	mustTry(t, other, 40, true)
	if got := root.Tokens(); got != 0 {
		t.Fatalf("root %v", got)
	}
	// A second later everyone has refilled: the root 100, the team 60 (40
	// held for x and y), other 40, x and y 20 each.
	clk.Advance(time.Second)
	mustTry(t, other, 40, true)
	mustTry(t, x, 20, true) // own
	mustTry(t, x, 20, true) // the team's spare
	mustTry(t, y, 20, true) // own, still there
	mustTry(t, x, 1, false)
	invariants(t, root)
}

// invariants checks that every class holds at least what its children
// hold, exactly.
func invariants(t *testing.T, root *Class) {
	t.Helper()
	d := root.lock()
	defer d.Mu.Unlock()
	now := max(d.Now(), d.seen)
	var walk func(c *Class)
	walk = func(c *Class) {
		if len(c.kids) > 0 {
			if c.spareTokens(now) < 0 {
				t.Fatalf("%s holds less than its children", className(c))
			}
		}
		for _, k := range c.kids {
			walk(k)
		}
	}
	walk(root)
}

type classResult struct {
	id  int
	err error
	at  time.Duration
}

func startClass(t *testing.T, c *Class, clk *clockwork.FakeClock, ctx context.Context, id int, cost int64, out chan<- classResult, wg *sync.WaitGroup) {
	t.Helper()
	before := classQueued(c)
	wg.Add(1)
	returned := make(chan struct{})
	go func() {
		defer wg.Done()
		err := c.Acquire(ctx, cost)
		out <- classResult{id, err, clk.Since(t0)}
		close(returned)
	}()
	testwait.Queued(t, func() int { return classQueued(c) }, before, returned)
}

func TestClassAcquireFIFOCancelDeadline(t *testing.T) {
	clk, root, a, b := newPair(t)
	mustTry(t, a, 50, true)
	mustTry(t, b, 50, true)
	out := make(chan classResult, 10)
	var wg sync.WaitGroup
	startClass(t, a, clk, t.Context(), 0, 10, out, &wg) // 200 ms: a's own 50/s
	ctx, cancel := context.WithCancel(t.Context())
	startClass(t, a, clk, ctx, 1, 5, out, &wg)
	startClass(t, a, clk, t.Context(), 2, 5, out, &wg)
	// FIFO: a cost-1 TryAcquire may not pass the queue.
	mustTry(t, a, 1, false)
	// A deadline too near fails at once, spending nothing.
	dctx, dcancel := clockwork.WithTimeout(t.Context(), clk, 100*time.Millisecond)
	defer dcancel()
	var we *throttle.WaitError
	if err := a.Acquire(dctx, 5); !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("near deadline: %v", err)
	}
	if we.Ahead != 3 || !strings.Contains(we.Error(), "behind 3 queued") {
		t.Fatalf("near deadline: Ahead %d (%v); want the 3 queued", we.Ahead, we)
	}
	// b is not blocked by a's queue.
	if w, err := b.WaitTime(10); err != nil || w != 200*time.Millisecond {
		t.Fatalf("b.WaitTime(10) = %v, %v", w, err)
	}
	cancel()
	if r := <-out; r.id != 1 || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled waiter: %+v", r)
	}
	// Waiter 0 at 200 ms, waiter 2 at 300 ms: the cancelled one left no
	// trace.
	for _, want := range []classResult{{0, nil, 200 * time.Millisecond}, {2, nil, 300 * time.Millisecond}} {
		if err := clk.BlockUntilContext(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(want.at - clk.Since(t0))
		if r := <-out; r.id != want.id || r.err != nil || r.at != want.at {
			t.Fatalf("got %+v, want %+v", r, want)
		}
	}
	wg.Wait()
	if got := root.Tokens(); got != 30-15 {
		t.Fatalf("root %v after the grants", got)
	}
}

func TestClassPermitSettle(t *testing.T) {
	_, root, a, _ := newPair(t)
	p, err := a.AcquirePermit(t.Context(), 40)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(10); err != nil {
		t.Fatal(err)
	}
	if got := a.Tokens(); got != 40 {
		t.Fatalf("a %v after a refund of 30, want 40", got)
	}
	if err := p.Settle(10); !errors.Is(err, throttle.ErrSettled) {
		t.Fatalf("second settle: %v", err)
	}
	// An overrun is a's own debt: b's guarantee and the invariant hold.
	p, _ = a.AcquirePermit(t.Context(), 40)
	if err := p.Settle(60); err != nil {
		t.Fatal(err)
	}
	if got := a.Tokens(); got != -20 {
		t.Fatalf("a %v after an overrun of 20, want -20", got)
	}
	if got := root.Tokens(); got != 30 {
		t.Fatalf("root %v, want 30", got)
	}
	invariants(t, root)
	// a is in debt and the root's 30 tokens are all held for b's 50... of
	// which b holds 50: the root holds less than b only through a's debt,
	// so a gets nothing until it has repaid.
	mustTry(t, a, 1, false)
}

func TestClassLimiter(t *testing.T) {
	clk := newClock()
	reqs, _ := NewQuota(10, throttle.Per(10, time.Second), throttle.WithClock(clk), throttle.WithName("rpm"))
	toks, _ := NewQuota(1000, throttle.Per(1000, time.Second), throttle.WithClock(clk), throttle.WithName("tpm"))
	ar := mustClass(t, reqs, Config{Name: "a", Rate: throttle.Per(5, time.Second)})
	at := mustClass(t, toks, Config{Name: "a", Rate: throttle.Per(500, time.Second)})
	l, err := NewLimiter(ar, at)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewLimiter(ar, reqs); err == nil {
		t.Fatal("two classes of one hierarchy accepted")
	}
	if ok, _ := l.TryAcquire(1, 900); ok {
		t.Fatal("900 granted: a's 500 and the root's spare of 500 are two lenders")
	}
	for _, n := range []int64{500, 400} { // a's own, then borrowed
		if ok, err := l.TryAcquire(1, n); err != nil || !ok {
			t.Fatalf("TryAcquire(1, %d) = %v, %v", n, ok, err)
		}
	}
	// 100 tokens left at the root.
	if ok, _ := l.TryAcquire(1, 101); ok {
		t.Fatal("granted above the tokens quota")
	}
	if got := ar.Tokens(); got != 3 {
		t.Fatalf("requests class %v: a refusal spent", got)
	}
	p, err := l.Acquire(t.Context(), 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(1, 50); err != nil {
		t.Fatal(err)
	}
	w, err := l.WaitTime(1, 200)
	if err != nil || w <= 0 {
		t.Fatalf("WaitTime = %v, %v", w, err)
	}
	clk.Advance(w)
	if ok, _ := l.TryAcquire(1, 200); !ok {
		t.Fatalf("not granted after WaitTime %v", w)
	}
}

func TestClassRemove(t *testing.T) {
	_, root, a, b := newPair(t)
	mustTry(t, a, 50, true)
	mustTry(t, a, 1, false)
	if err := b.Remove(); err != nil {
		t.Fatal(err)
	}
	mustTry(t, a, 50, true) // b's 50 are the root's spare now
	if _, err := b.TryAcquire(1); err == nil {
		t.Fatal("a removed class granted")
	}
	if err := b.Remove(); !errors.Is(err, ErrClassRemoved) {
		t.Fatalf("Remove on a removed class: %v, want ErrClassRemoved", err)
	}
	if err := root.Remove(); err == nil {
		t.Fatal("removed the root")
	}
	c := mustClass(t, root, Config{Name: "c", Rate: throttle.Per(50, time.Second)})
	if got := c.Tokens(); got != 0 {
		t.Fatalf("new class starts with %v; the root had no spare", got)
	}
}

// TestClassInterleaved drives a hierarchy with every entry point in a
// random order, checking on every grant that the quota holds and after
// every call that each class holds what its children hold.
func TestClassInterleaved(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 2698))
	for round := range 20 {
		clk := newClock()
		root, _ := NewQuota(200, throttle.Per(200, time.Second), throttle.WithClock(clk))
		q := newQuotaCheck(t, root)
		t1 := mustClass(t, root, Config{Name: "t1", Rate: throttle.Per(120, time.Second)})
		t2 := mustClass(t, root, Config{Name: "t2", Rate: throttle.Per(50, time.Second), Ceil: throttle.Per(100, time.Second), CeilBurst: 100})
		x := mustClass(t, t1, Config{Name: "x", Rate: throttle.Per(60, time.Second)})
		y := mustClass(t, t1, Config{Name: "y", Rate: throttle.Per(30, time.Second)})
		cs := []*Class{t1, t2, x, y, root}
		var extra *Class
		for range 300 {
			c := cs[rng.IntN(len(cs))]
			switch rng.IntN(6) {
			case 0, 1:
				c.TryAcquire(rng.Int64N(40) + 1)
			case 2:
				// Acquire when WaitTime says it need not wait, and with a
				// deadline that is too near otherwise.
				n := rng.Int64N(20) + 1
				w, err := c.WaitTime(n)
				if err == nil && w == 0 {
					if err := c.Acquire(t.Context(), n); err != nil {
						t.Fatalf("round %d: Acquire after WaitTime 0: %v", round, err)
					}
				} else if err == nil {
					ctx, cancel := clockwork.WithTimeout(t.Context(), clk, w-1)
					if err := c.Acquire(ctx, n); !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("round %d: Acquire with a deadline before WaitTime %v: %v", round, w, err)
					}
					cancel()
				}
			case 3:
				clk.Advance(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
			case 4:
				if extra == nil {
					extra, _ = root.NewClass(Config{Name: "extra", Rate: throttle.Per(30, time.Second)})
				} else if extra.Remove() == nil {
					extra = nil
				}
			case 5:
				if w, err := c.WaitTime(3); err == nil && w == 0 {
					p, err := c.AcquirePermit(t.Context(), 3)
					if err != nil {
						t.Fatal(err)
					}
					p.Settle(3)
				}
			}
			invariants(t, root)
		}
		if len(q.grants[root]) == 0 {
			t.Fatalf("round %d granted nothing", round)
		}
	}
}

func TestKeyedClasses(t *testing.T) {
	clk := newClock()
	org, _ := NewQuota(100, throttle.Per(100, time.Second), throttle.WithClock(clk))
	tenants := NewKeyed(org, func(name string) Config {
		return Config{Name: name, Rate: throttle.Per(40, time.Second)}
	})
	for _, n := range []string{"a", "b"} {
		if ok, err := tenants.TryAcquire(n, 40); !ok || err != nil {
			t.Fatalf("%s: TryAcquire(40) = %v, %v", n, ok, err)
		}
	}
	// A third tenant's 40 a second do not fit next to a's and b's 80, and
	// neither is idle.
	if _, err := tenants.TryAcquire("c", 1); err == nil {
		t.Fatal("a third guarantee of 40 fit in 100")
	}
	// a borrows the root's spare of 20.
	if ok, _ := tenants.TryAcquire("a", 20); !ok {
		t.Fatal("a could not borrow the spare")
	}
	clk.Advance(2 * time.Second) // b idle and full again; a too
	if ok, err := tenants.TryAcquire("c", 40); !ok || err != nil {
		t.Fatalf("c after the others went idle: %v, %v", ok, err)
	}
	if n := tenants.Len(); n != 1 {
		t.Fatalf("%d keys, want 1: the sweep dropped both idle ones", n)
	}
	if ok, err := tenants.TryAcquire("a", 1); !ok || err != nil {
		t.Fatalf("a made again: %v, %v", ok, err)
	}
}

// FuzzClassConfig builds hierarchies from arbitrary configs (what a
// program reads from its configuration) and spends on them: no panic, and
// every class holds what its children hold.
func FuzzClassConfig(f *testing.F) {
	f.Add(int64(100), int64(100), int64(1e9), int64(50), int64(1e9), int64(0), int64(30), int64(6e10), int64(7), uint64(1))
	f.Add(int64(1<<62), int64(999_999_937), int64(1e9), int64(1<<20), int64(3), int64(1), int64(5), int64(7), int64(0), uint64(99))
	f.Fuzz(func(t *testing.T, capacity, tok, per, tokA, perA, burstA, tokB, perB, burstB int64, seed uint64) {
		clk := newClock()
		root, err := NewQuota(capacity, throttle.Per(tok, time.Duration(per)), throttle.WithClock(clk))
		if err != nil {
			return
		}
		a, err := root.NewClass(Config{Name: "a", Rate: throttle.Per(tokA, time.Duration(perA)), Burst: burstA})
		if err != nil {
			return
		}
		b, err := a.NewClass(Config{Name: "b", Rate: throttle.Per(tokB, time.Duration(perB)), Burst: burstB})
		if err != nil {
			b = a
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		for range 20 {
			c := []*Class{root, a, b}[rng.IntN(3)]
			c.TryAcquire(rng.Int64N(max(capacity/4, 1)) + 1)
			clk.Advance(time.Duration(rng.Int64N(int64(time.Second))))
			invariants(t, root)
		}
	})
}

// TestClassWaitTimeExact: on random hierarchies and states, with nobody
// waiting, TryAcquire fails one nanosecond before WaitTime and succeeds at
// it, whether the grant comes from the class's own guarantee or is
// borrowed.
func TestClassWaitTimeExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	checked := 0
	for range 2000 {
		clk := newClock()
		root, _ := NewQuota(rng.Int64N(500)+100, throttle.Per(rng.Int64N(1000)+100, time.Second), throttle.WithClock(clk))
		var cs []*Class
		for _, share := range []int64{5, 3, 2} {
			r := root.rate.Tokens() * share / 10
			c, err := root.NewClass(Config{Rate: throttle.Per(r, time.Second), Burst: max(root.g.Cap*share/20, 1)})
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		sub, err := cs[0].NewClass(Config{Rate: throttle.Per(cs[0].rate.Tokens()/3, time.Second), Burst: 1 + rng.Int64N(cs[0].g.Cap/2)})
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, sub)
		for range 10 {
			c := cs[rng.IntN(len(cs))]
			c.TryAcquire(rng.Int64N(c.g.Cap) + 1)
			clk.Advance(time.Duration(rng.Int64N(int64(50 * time.Millisecond))))
		}
		c := cs[rng.IntN(len(cs))]
		n := rng.Int64N(c.c.Cap) + 1
		w, err := c.WaitTime(n)
		if err != nil || w == 0 {
			continue
		}
		checked++
		clk.Advance(w - 1)
		if ok, _ := c.TryAcquire(n); ok {
			t.Fatalf("granted %d one ns before WaitTime %v", n, w)
		}
		clk.Advance(1)
		if ok, _ := c.TryAcquire(n); !ok {
			t.Fatalf("refused %d at WaitTime %v", n, w)
		}
	}
	if checked < 200 {
		t.Fatalf("only %d cases waited", checked)
	}
}

// TestClassLimiterQueued: a waiter on two hierarchies is served when both
// cover it, at that instant, and meanwhile holds nothing in either.
func TestClassLimiterQueued(t *testing.T) {
	clk := newClock()
	reqs, _ := NewQuota(10, throttle.Per(10, time.Second), throttle.WithClock(clk))
	toks, _ := NewQuota(1000, throttle.Per(1000, time.Second), throttle.WithClock(clk))
	ar := mustClass(t, reqs, Config{Name: "a-requests", Rate: throttle.Per(5, time.Second)})
	at := mustClass(t, toks, Config{Name: "a-tokens", Rate: throttle.Per(500, time.Second)})
	l, err := NewLimiter(ar, at)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := l.TryAcquire(1, 500); !ok {
		t.Fatal("first grant refused")
	}
	// The tokens class is empty and the root holds 500 for the others'
	// guarantee... of which there are none: the root's spare is 500.
	if ok, _ := l.TryAcquire(1, 500); !ok {
		t.Fatal("borrowed grant refused")
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(t.Context(), 1, 250)
		done <- err
	}()
	waitClassQueued(t, at, 1)
	// The tokens class refills 500/s; so does the root's spare (the root
	// refills 1000/s, 500 of them held for the class): 250 tokens after
	// 500 ms either way. Meanwhile the waiter holds nothing in either
	// hierarchy.
	if got := ar.Tokens(); got != 3 {
		t.Fatalf("requests class %v while waiting, want 3", got)
	}
	if err := clk.BlockUntilContext(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(500*time.Millisecond - 1)
	// Still queued, its timer still armed.
	bctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := clk.BlockUntilContext(bctx, 1); err != nil || classQueued(at) != 1 {
		t.Fatalf("served early (%v)", err)
	}
	clk.Advance(1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestClassCancelRace cancels a waiter as its instant comes: whichever
// way the race goes, it either got its tokens or spent nothing.
func TestClassCancelRace(t *testing.T) {
	for i := range 50 {
		clk, root, a, _ := newPair(t)
		mustTry(t, a, 50, true)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- a.Acquire(ctx, 10) }()
		waitClassQueued(t, a, 0+1)
		if err := clk.BlockUntilContext(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(200 * time.Millisecond)
		cancel()
		err := <-done
		// At 200 ms a holds 10 and the root 70 before the grant.
		want := 0.0
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			want = 10
		}
		if got := a.Tokens(); got != want {
			t.Fatalf("run %d: err %v, a holds %v, want %v", i, err, got, want)
		}
		if got := root.Tokens(); got != 60+want {
			t.Fatalf("run %d: err %v, root holds %v, want %v", i, err, got, 60+want)
		}
		invariants(t, root)
	}
}

// TestClassSettleBorrowed: a refund of a borrowed grant goes back to the
// lender, not to the borrower's own guarantee.
func TestClassSettleBorrowed(t *testing.T) {
	clk := newClock()
	root, _ := NewQuota(100, throttle.Per(100, time.Second), throttle.WithClock(clk))
	a := mustClass(t, root, Config{Name: "a", Rate: throttle.Per(20, time.Second), Burst: 20})
	mustTry(t, a, 20, true)
	p, err := a.AcquirePermit(t.Context(), 50) // borrowed: the root's spare is 80
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(30); err != nil {
		t.Fatal(err)
	}
	if a.Tokens() != 0 || root.Tokens() != 50 {
		t.Fatalf("after the refund: a %v (want 0), root %v (want 50)", a.Tokens(), root.Tokens())
	}
	invariants(t, root)
}

// TestClassRescaleWithWaiters adds a class whose period needs a new common
// denominator while a waiter is queued: the waiter keeps its instant.
func TestClassRescaleWithWaiters(t *testing.T) {
	clk := newClock()
	root, _ := NewQuota(100, throttle.Per(100, time.Second), throttle.WithClock(clk))
	a := mustClass(t, root, Config{Name: "a", Rate: throttle.Per(50, time.Second), Burst: 50})
	b := mustClass(t, root, Config{Name: "b", Rate: throttle.Per(45, time.Second), Burst: 45})
	mustTry(t, a, 50, true)
	mustTry(t, b, 45, true)
	// The root's spare is 5 and grows 5 a second; a's own 7 take 140 ms.
	done := make(chan error, 1)
	go func() { done <- a.Acquire(t.Context(), 7) }()
	waitClassQueued(t, a, 1)
	den := root.tree.den
	// One token every 370 ms: a period that needs a new common denominator.
	mustClass(t, root, Config{Name: "odd", Rate: throttle.Per(1, 370*time.Millisecond), Burst: 1})
	if root.tree.den == den {
		t.Fatal("no new common denominator")
	}
	if err := clk.BlockUntilContext(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(140*time.Millisecond - 1)
	bctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := clk.BlockUntilContext(bctx, 1); err != nil || classQueued(a) != 1 {
		t.Fatalf("served early (%v)", err)
	}
	clk.Advance(1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	invariants(t, root)
}

// TestKeyedClassesSweepsLazily: many short-lived tenants do not pile up.
func TestKeyedClassesSweepsLazily(t *testing.T) {
	clk := newClock()
	org, _ := NewQuota(1_000_000, throttle.Per(1_000_000, time.Second), throttle.WithClock(clk))
	tenants := NewKeyed(org, func(n int) Config {
		return Config{Rate: throttle.Per(100, time.Second), Burst: 10}
	})
	for i := range 2000 {
		if ok, err := tenants.TryAcquire(i, 1); !ok || err != nil {
			t.Fatalf("tenant %d: %v, %v", i, ok, err)
		}
		clk.Advance(10 * time.Millisecond) // each is full again 10 ms later
	}
	if n := tenants.Len(); n > 2*minKeyedSweep {
		t.Fatalf("%d keys held", n)
	}
}
