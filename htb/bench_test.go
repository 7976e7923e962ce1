package htb

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
