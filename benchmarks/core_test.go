package benchmarks

import (
	"math"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"golang.org/x/time/rate"
)

// The limiters below never run short during a benchmark, so every call
// succeeds and the benchmarks measure the bookkeeping of one decision.
//
// "full": the bucket sits at capacity, the common case of a limit that is
// rarely approached.
// "refilling": the bucket is half full and the rate is a prime number of
// tokens per second, so every call does the general refill arithmetic
// (our 128-bit multiply and divide, x/time/rate's float multiply) instead
// of stopping at "already full".
const (
	fullCapacity  = 1 << 62
	fullRate      = 1_000_000_000 // per second
	refillBurst   = 1 << 40
	refillPerSec  = 999_999_937 // prime: the fraction does not reduce
	refillDrained = refillBurst / 2
)

func newThrottle(b *testing.B, state string) *throttle.Bucket {
	b.Helper()
	var (
		bk  *throttle.Bucket
		err error
	)
	switch state {
	case "full":
		bk, err = throttle.New(fullCapacity, throttle.Per(fullRate, time.Second))
	case "refilling":
		bk, err = throttle.New(refillBurst, throttle.Per(refillPerSec, time.Second))
		if err == nil {
			var ok bool
			ok, err = bk.TryAcquire(refillDrained)
			if !ok && err == nil {
				b.Fatal("could not drain the bucket")
			}
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	return bk
}

func newXRate(b *testing.B, state string) *rate.Limiter {
	b.Helper()
	switch state {
	case "full":
		return rate.NewLimiter(fullRate, math.MaxInt)
	case "refilling":
		l := rate.NewLimiter(refillPerSec, refillBurst)
		if !l.AllowN(time.Now(), refillDrained) {
			b.Fatal("could not drain the limiter")
		}
		return l
	}
	b.Fatalf("unknown state %q", state)
	return nil
}

var states = []string{"full", "refilling"}

// serialLoop runs op b.N times on one goroutine, reporting allocations and,
// besides the wall-clock ns/op, the CPU time of the goroutine's OS thread
// per op: "cpu-ns/op" leaves out the time the thread was descheduled, so it
// stays meaningful on a machine that other work keeps busy.
func serialLoop(b *testing.B, op func()) {
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	begin, ok := threadCPU()
	n := 0
	for b.Loop() {
		op()
		n++
	}
	if end, ok2 := threadCPU(); ok && ok2 && n > 0 {
		b.ReportMetric(float64(end-begin)/float64(n), "cpu-ns/op")
	}
}

// parallelLoop runs op from GOMAXPROCS goroutines with b.RunParallel until
// b.N calls are done or op returns false, reporting allocations and the
// process's CPU time per op, all goroutines together ("cpu-ns/op"; ns/op is
// wall time over all ops, as usual for RunParallel).
func parallelLoop(b *testing.B, op func() bool) {
	b.ReportAllocs()
	begin := readUsage(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !op() {
				return
			}
		}
	})
	b.ReportMetric(float64(readUsage(b).cpu-begin.cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkTryAcquire compares throttle's TryAcquire(1) with x/time/rate's
// Allow on a limiter with tokens to spare, from one goroutine. Target: ours
// at most half of x/time/rate's ns/op, 0 allocs/op.
func BenchmarkTryAcquire(b *testing.B) {
	for _, state := range states {
		b.Run("state="+state+"/lib=throttle", func(b *testing.B) {
			bk := newThrottle(b, state)
			serialLoop(b, func() {
				if ok, err := bk.TryAcquire(1); !ok || err != nil {
					b.Fatalf("TryAcquire = %v, %v", ok, err)
				}
			})
		})
		b.Run("state="+state+"/lib=xrate", func(b *testing.B) {
			l := newXRate(b, state)
			serialLoop(b, func() {
				if !l.Allow() {
					b.Fatal("Allow = false")
				}
			})
		})
	}
}

// BenchmarkTryAcquireParallel is BenchmarkTryAcquire with GOMAXPROCS
// goroutines sharing one limiter.
func BenchmarkTryAcquireParallel(b *testing.B) {
	for _, state := range states {
		b.Run("state="+state+"/lib=throttle", func(b *testing.B) {
			bk := newThrottle(b, state)
			parallelLoop(b, func() bool {
				ok, err := bk.TryAcquire(1)
				if !ok || err != nil {
					b.Errorf("TryAcquire = %v, %v", ok, err)
				}
				return ok
			})
		})
		b.Run("state="+state+"/lib=xrate", func(b *testing.B) {
			l := newXRate(b, state)
			parallelLoop(b, func() bool {
				ok := l.Allow()
				if !ok {
					b.Error("Allow = false")
				}
				return ok
			})
		})
	}
}

// BenchmarkAcquireFree compares Acquire and Wait when the tokens are there:
// the cost of the blocking API on its fast path. No target in the spec;
// it shows whether the fast path allocates.
func BenchmarkAcquireFree(b *testing.B) {
	ctx := b.Context()
	b.Run("lib=throttle", func(b *testing.B) {
		bk := newThrottle(b, "full")
		serialLoop(b, func() {
			if err := bk.Acquire(ctx, 1); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("lib=xrate", func(b *testing.B) {
		l := newXRate(b, "full")
		serialLoop(b, func() {
			if err := l.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// BenchmarkFloor measures what any limiter that reads a monotonic clock and
// takes a lock must pay, for reference: the spec puts our TryAcquire's floor
// at one time.Since plus one uncontended lock and unlock.
func BenchmarkFloor(b *testing.B) {
	epoch := time.Now()
	var sink time.Duration
	b.Run("op=time.Now", func(b *testing.B) {
		var t time.Time
		serialLoop(b, func() { t = time.Now() })
		sink += time.Duration(t.Nanosecond())
	})
	b.Run("op=time.Since", func(b *testing.B) {
		serialLoop(b, func() { sink += time.Since(epoch) })
	})
	b.Run("op=mutex", func(b *testing.B) {
		var mu sync.Mutex
		serialLoop(b, func() {
			mu.Lock()
			mu.Unlock() //nolint:staticcheck // an empty critical section is the point
		})
	})
	b.Run("op=time.Since+mutex", func(b *testing.B) {
		var mu sync.Mutex
		var last time.Duration
		serialLoop(b, func() {
			mu.Lock()
			last = time.Since(epoch)
			mu.Unlock()
		})
		sink += last
	})
	if sink == 42 {
		b.Log(sink) // keeps sink, and so the clock reads, alive
	}
}
