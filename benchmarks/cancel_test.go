package benchmarks

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
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
//   - bound_ratio: the largest, over every grant k of every window, of
//     k / (capacity + rate × t_k), where t_k is when the k-th grant returned,
//     measured from before the limiter was made. An exact bucket can never
//     have granted more than capacity + rate × t by time t, so this must not
//     exceed 1; the benchmark fails if ours does.
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
// With exact set, granting more than an exact bucket could is an error.
func runCancel(b *testing.B, exact bool, newLimiter func() func(context.Context) error) {
	var total int
	var worst float64
	for i := range b.N {
		at := cancelRound(b, uint64(i), newLimiter)
		total += len(at)
		for k, t := range at {
			limit := cancelBurst + cancelRate*t.Seconds()
			ratio := float64(k+1) / limit
			worst = max(worst, ratio)
			// k+1 > capacity + rate × t, in integers: no rounding excuses.
			if exact && (int64(k+1)-cancelBurst)*int64(time.Second) > cancelRate*int64(t) {
				b.Errorf("window %d: grant %d returned %v after the start, above capacity + rate × t = %.3f",
					i, k+1, t, limit)
				break
			}
		}
	}
	b.ReportMetric(float64(total)/(cancelRate*cancelWindow.Seconds()*float64(b.N)), "delivered_ratio")
	b.ReportMetric(worst, "bound_ratio")
}

// cancelRound runs one window and returns, in order, when each counted
// grant returned, measured from before the limiter was made.
func cancelRound(b *testing.B, round uint64, newLimiter func() func(context.Context) error) []time.Duration {
	ctx, stop := context.WithCancel(b.Context())
	defer stop()
	begin := time.Now()
	wait := newLimiter()
	var (
		wg sync.WaitGroup
		at = make([][]time.Duration, cancelWaiters)
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
				if d := time.Since(begin); err == nil && d < cancelWindow {
					at[w] = append(at[w], d)
				}
			}
		})
	}
	timer := time.NewTimer(cancelWindow - time.Since(begin))
	<-timer.C
	stop()
	wg.Wait()
	all := slices.Concat(at...)
	slices.Sort(all)
	return all
}
