package htb

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// BenchmarkClassAcquireFree is Class.Acquire when the tokens are there, at
// depth 2: it must not allocate.
func BenchmarkClassAcquireFree(b *testing.B) {
	root, _ := NewQuota(1<<62, throttle.Per(1_000_000_000, time.Second))
	team, _ := root.NewClass(Config{Rate: throttle.Per(500_000_000, time.Second)})
	c, _ := team.NewClass(Config{Rate: throttle.Per(250_000_000, time.Second)})
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Acquire(ctx, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func TestClassFastPathsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	root, _ := NewQuota(1<<62, throttle.Per(1_000_000_000, time.Second))
	team, _ := root.NewClass(Config{Rate: throttle.Per(500_000_000, time.Second)})
	c, _ := team.NewClass(Config{Rate: throttle.Per(250_000_000, time.Second)})
	ctx := t.Context()
	if n := testing.AllocsPerRun(100, func() { c.TryAcquire(1) }); n != 0 {
		t.Errorf("TryAcquire: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() { c.Acquire(ctx, 1) }); n != 0 {
		t.Errorf("Acquire: %v allocs", n)
	}
}

// BenchmarkClassAcquireQueued is Class.Acquire with waiters queued: two
// classes that borrow a quota of one token per microsecond, burst 2, four
// goroutines on each, so that nearly every call queues, is projected,
// sleeps and is woken by a grant. ns/op is a grant's cost once the
// machinery, not the rate, is what limits.
func BenchmarkClassAcquireQueued(b *testing.B) {
	root, _ := NewQuota(2, throttle.Per(1_000_000, time.Second))
	kids := make([]*Class, 2)
	for i := range kids {
		var err error
		if kids[i], err = root.NewClass(Config{Rate: throttle.Per(400_000, time.Second), Burst: 1}); err != nil {
			b.Fatal(err)
		}
	}
	ctx := b.Context()
	var n atomic.Int64
	n.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for g := range 8 {
		c := kids[g%len(kids)]
		wg.Go(func() {
			for n.Add(-1) >= 0 {
				if err := c.Acquire(ctx, 1); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkLimiterAcquireSettle is a Limiter's Acquire of a class's
// tokens and the Settle of its Permit: the path of a Transport over
// classes, through the option, error and settling code the core shares.
func BenchmarkLimiterAcquireSettle(b *testing.B) {
	root, _ := NewQuota(1<<62, throttle.Per(1_000_000_000, time.Second))
	team, _ := root.NewClass(Config{Rate: throttle.Per(500_000_000, time.Second)})
	l, err := NewLimiter(team)
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		p, err := l.Acquire(ctx, 2)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Settle(1); err != nil {
			b.Fatal(err)
		}
	}
}

// TestScheduleDoesNotAllocate: a round of the simulation over a few
// queued waiters, which every change to a level and every timer runs,
// allocates nothing, borrowers among them.
func TestScheduleDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	clk := clockwork.NewFakeClockAt(t0)
	root, err := NewQuota(4, throttle.Per(4, time.Minute), throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	kids := []*Class{
		mustClass(t, root, Config{Rate: throttle.Per(1, time.Minute), Burst: 1}),
		mustClass(t, root, Config{Rate: throttle.Per(1, time.Minute), Burst: 1}),
	}
	// Nothing left: every call below queues, and would borrow.
	mustTry(t, kids[0], 1, true)
	mustTry(t, kids[1], 1, true)
	mustTry(t, root, 2, true)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i, c := range []*Class{kids[0], kids[1], kids[0], kids[1]} {
		wg.Go(func() { c.Acquire(ctx, 1) })
		waitClassQueued(t, c, i/2+1)
	}
	d := root.lock()
	now := d.Now()
	n := testing.AllocsPerRun(100, func() { d.schedule(now, nil) })
	d.Mu.Unlock()
	cancel()
	wg.Wait()
	if n != 0 {
		t.Errorf("schedule over 4 waiters: %v allocs", n)
	}
}
