package benchmarks

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

// pairBlock is how many calls each side makes per timed block: long enough
// (tens of microseconds) that reading the clock around it costs nothing
// measurable, short enough that a block rarely straddles a preemption.
const pairBlock = 512

// BenchmarkTryAcquirePaired is BenchmarkTryAcquire measured in pairs: each
// iteration times a block of TryAcquire(1) calls and a block of Allow calls
// back to back on one OS thread, alternating which goes first. On a shared
// machine the speed of a core drifts by ±15% over seconds, so two
// benchmarks run one after the other can disagree by more than the
// difference being measured; blocks tens of microseconds apart see the same
// machine. "ratio" is the median over the pairs of ours / x/time/rate's
// time (the target is at most 0.5); the per-call times are the medians of
// each side's blocks.
func BenchmarkTryAcquirePaired(b *testing.B) {
	for _, state := range states {
		b.Run("state="+state, func(b *testing.B) {
			bk, l := newThrottle(b, state), newXRate(b, state)
			ours := func() time.Duration {
				start := time.Now()
				for range pairBlock {
					if ok, err := bk.TryAcquire(1); !ok || err != nil {
						b.Fatalf("TryAcquire = %v, %v", ok, err)
					}
				}
				return time.Since(start)
			}
			theirs := func() time.Duration {
				start := time.Now()
				for range pairBlock {
					if !l.Allow() {
						b.Fatal("Allow = false")
					}
				}
				return time.Since(start)
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var ratios []float64
			var us, them []time.Duration
			for i := 0; b.Loop(); i++ {
				var u, t time.Duration
				if i%2 == 0 {
					u, t = ours(), theirs()
				} else {
					t, u = theirs(), ours()
				}
				us, them = append(us, u), append(them, t)
				ratios = append(ratios, float64(u)/float64(t))
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "ratio")
			b.ReportMetric(float64(median(us))/pairBlock, "throttle-ns/call")
			b.ReportMetric(float64(median(them))/pairBlock, "xrate-ns/call")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
