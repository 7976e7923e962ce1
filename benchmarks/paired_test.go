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

// paired times op and base in pairs of blocks of pairBlock calls, back to
// back on one OS thread, alternating which goes first, until b.Loop is
// done. On a shared machine the speed of a core drifts by ±15% over
// seconds, so two benchmarks run one after the other can disagree by more
// than the difference being measured; blocks tens of microseconds apart
// see the same machine. It reports "ratio", the median over the pairs of
// op's time over base's, and each side's median time per call under the
// names given. op and base fail the benchmark themselves.
func paired(b *testing.B, opName string, op func(), baseName string, base func()) {
	block := func(f func()) time.Duration {
		start := time.Now()
		for range pairBlock {
			f()
		}
		return time.Since(start)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ratios []float64
	var ops, bases []time.Duration
	for i := 0; b.Loop(); i++ {
		var o, t time.Duration
		if i%2 == 0 {
			o, t = block(op), block(base)
		} else {
			t, o = block(base), block(op)
		}
		ops, bases = append(ops, o), append(bases, t)
		ratios = append(ratios, float64(o)/float64(t))
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "ratio")
	b.ReportMetric(float64(median(ops))/pairBlock, opName+"-ns/call")
	b.ReportMetric(float64(median(bases))/pairBlock, baseName+"-ns/call")
}

// BenchmarkTryAcquirePaired is BenchmarkTryAcquire measured with paired:
// "ratio" is our TryAcquire(1) over x/time/rate's Allow, the target at most
// 0.5.
func BenchmarkTryAcquirePaired(b *testing.B) {
	for _, state := range states {
		b.Run("state="+state, func(b *testing.B) {
			bk, l := newThrottle(b, state), newXRate(b, state)
			paired(b, "throttle", func() {
				if ok, err := bk.TryAcquire(1); !ok || err != nil {
					b.Fatalf("TryAcquire = %v, %v", ok, err)
				}
			}, "xrate", func() {
				if !l.Allow() {
					b.Fatal("Allow = false")
				}
			})
		})
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
