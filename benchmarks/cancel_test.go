package benchmarks

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"golang.org/x/time/rate"
)

// Waiters that give up: 300 goroutines at 1,000 grants/s with capacity 5,
// each acquiring in a loop with a fresh context that is cancelled (it has
// no deadline) at a uniformly random moment within 300 ms of the call.
const (
	cancelWaiters  = 300
	cancelRate     = 1000 // grants per second
	cancelBurst    = 5
	cancelPatience = 300 * time.Millisecond
	cancelWindow   = time.Second
)

// BenchmarkCancel runs the cancellation workload for one window of
// cancelWindow per op and reports:
//
//   - delivered_ratio: grants returned within the windows over rate ×
//     total window; target: ours at least 0.95.
//   - bound_ratio: grants in the worst window over capacity + rate ×
//     window, the most an exact bucket can grant; it must never exceed 1,
//     and the benchmark fails if ours does.
//
// Both libraries run the same workload: the same goroutines, the same
// seeded cancellation times (the n-th call of waiter i gets the same
// patience for both), plain context.WithCancel contexts (x/time/rate's Wait
// fails fast on a deadline, so a deadline would not test cancellation), and
// the same counting: a grant counts when Acquire or Wait returns nil before
// the window closes.
func BenchmarkCancel(b *testing.B) {
	b.Run("lib=throttle", func(b *testing.B) {
		runCancel(b, true, func() func(context.Context) error {
			bk, err := throttle.New(cancelBurst, throttle.Per(cancelRate, time.Second))
			if err != nil {
				b.Fatal(err)
			}
			return func(ctx context.Context) error { return bk.Acquire(ctx, 1) }
		})
	})
	b.Run("lib=xrate", func(b *testing.B) {
		runCancel(b, false, func() func(context.Context) error {
			return rate.NewLimiter(cancelRate, cancelBurst).Wait
		})
	})
}

// runCancel runs b.N windows, each on a fresh limiter made by newLimiter.
// With exact set, a window that grants more than an exact bucket could is
// an error.
func runCancel(b *testing.B, exact bool, newLimiter func() func(context.Context) error) {
	var total int64
	var spent time.Duration
	var worst float64
	for i := range b.N {
		granted, window := cancelRound(b, uint64(i), newLimiter)
		total += granted
		spent += window
		limit := cancelBurst + int64(cancelRate*window.Seconds())
		if exact && granted > limit {
			b.Errorf("window %d: %d grants in %v, above capacity + rate × window = %d", i, granted, window, limit)
		}
		worst = max(worst, float64(granted)/float64(limit))
	}
	b.ReportMetric(float64(total)/(cancelRate*spent.Seconds()), "delivered_ratio")
	b.ReportMetric(worst, "bound_ratio")
}

// cancelRound runs one window and returns the grants counted and the
// window's length, measured from before the limiter was made, so that the
// bound capacity + rate × window is one the limiter must respect.
func cancelRound(b *testing.B, round uint64, newLimiter func() func(context.Context) error) (int64, time.Duration) {
	ctx, stop := context.WithCancel(b.Context())
	defer stop()
	begin := time.Now()
	deadline := begin.Add(cancelWindow)
	wait := newLimiter()
	var (
		granted atomic.Int64
		wg      sync.WaitGroup
	)
	for w := range cancelWaiters {
		rng := rand.New(rand.NewPCG(round, uint64(w)))
		wg.Go(func() {
			for ctx.Err() == nil {
				call, cancel := context.WithCancel(ctx)
				t := time.AfterFunc(time.Duration(rng.Int64N(int64(cancelPatience))), cancel)
				err := wait(call)
				t.Stop()
				cancel()
				if err == nil && time.Now().Before(deadline) {
					granted.Add(1)
				}
			}
		})
	}
	timer := time.NewTimer(time.Until(deadline))
	<-timer.C
	stop()
	wg.Wait()
	return granted.Load(), deadline.Sub(begin)
}
