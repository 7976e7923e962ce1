package benchmarks

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"golang.org/x/time/rate"
)

// Many goroutines block on one slow limiter: 1,000 waiters at 2,000
// grants/s, capacity 1, on the real clock.
const (
	waitersN     = 1000
	waitersRate  = 2000 // grants per second
	waitersBurst = 1
)

// BenchmarkWaiters measures 1,000 goroutines blocked in Acquire (ours) or
// Wait (x/time/rate) on a limiter of 2,000/s with capacity 1. One op is one
// grant, so -benchtime 2000x is a one-second run and ns/op is the wall time
// between grants (500,000 at the configured rate). It reports:
//
//   - cpu-ns/grant: user+system CPU of the whole process (getrusage) from
//     the start to the b.N-th grant, divided by b.N; target: ours no higher
//     than x/time/rate's.
//   - sleeps/grant: voluntary context switches of the process's threads
//     (getrusage) per grant: how often a thread parked, and so had to be
//     woken, which is most of the CPU cost of a slow limiter.
//   - rate_ratio: grants delivered per second over the configured rate;
//     target: within 1% of 1.
//
// The limiter is emptied before the clock starts, so the initial burst does
// not count, and the goroutines are created before the clock starts too;
// waking them is part of what is measured, for both libraries alike.
func BenchmarkWaiters(b *testing.B) {
	b.Run("lib=throttle", func(b *testing.B) {
		bk, err := throttle.New(waitersBurst, throttle.Per(waitersRate, time.Second))
		if err != nil {
			b.Fatal(err)
		}
		runWaiters(b, func() bool { ok, _ := bk.TryAcquire(waitersBurst); return ok },
			func(ctx context.Context) error { return bk.Acquire(ctx, 1) })
	})
	b.Run("lib=xrate", func(b *testing.B) {
		l := rate.NewLimiter(waitersRate, waitersBurst)
		runWaiters(b, func() bool { return l.AllowN(time.Now(), waitersBurst) }, l.Wait)
	})
}

// runWaiters runs waitersN goroutines that call wait in a loop until b.N
// grants have been delivered, and reports the metrics described on
// BenchmarkWaiters. drain must empty the limiter.
func runWaiters(b *testing.B, drain func() bool, wait func(context.Context) error) {
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var (
		grants  atomic.Int64
		end     time.Time
		useEnd  usage
		start   = make(chan struct{})
		reached = make(chan struct{})
		wg      sync.WaitGroup
	)
	n := int64(b.N)
	for range waitersN {
		wg.Go(func() {
			<-start
			for {
				if err := wait(ctx); err != nil {
					return // cancelled once b.N grants are in
				}
				if grants.Add(1) == n {
					end, useEnd = time.Now(), readUsage(b)
					close(reached)
				}
			}
		})
	}
	// The clock starts when the limiter is emptied: its next token is due
	// one interval later.
	b.ResetTimer()
	useBegin := readUsage(b)
	if !drain() {
		b.Fatal("could not empty the limiter")
	}
	begin := time.Now()
	close(start)
	<-reached
	b.StopTimer()
	cancel()
	wg.Wait()
	elapsed := end.Sub(begin)
	b.ReportMetric(float64(useEnd.cpu-useBegin.cpu)/float64(n), "cpu-ns/grant")
	b.ReportMetric(float64(useEnd.switches-useBegin.switches)/float64(n), "sleeps/grant")
	b.ReportMetric(float64(n)/elapsed.Seconds()/waitersRate, "rate_ratio")
}
