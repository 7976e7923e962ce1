package benchmarks

import (
	"testing"

	"github.com/throttlekit/throttle"
)

// BenchmarkLimiterTryAcquire compares an all-or-nothing Limiter over three
// limits (requests, tokens, a daily cap) with one bucket, both with tokens
// to spare. Target: the three-limit Limiter at most 2x the single bucket.
func BenchmarkLimiterTryAcquire(b *testing.B) {
	for _, state := range states {
		b.Run("state="+state+"/limits=1", func(b *testing.B) {
			bk := newThrottle(b, state)
			serialLoop(b, func() { bk.TryAcquire(1) })
		})
		b.Run("state="+state+"/limits=3", func(b *testing.B) {
			l := newLimiter3(b, state)
			serialLoop(b, func() { l.TryAcquire(1, 100, 100) })
		})
	}
}

// BenchmarkLimiterTryAcquirePaired is BenchmarkLimiterTryAcquire measured
// with paired: "ratio" is the three-limit Limiter over one bucket, the
// target at most 2.
func BenchmarkLimiterTryAcquirePaired(b *testing.B) {
	for _, state := range states {
		b.Run("state="+state, func(b *testing.B) {
			bk := newThrottle(b, state)
			l := newLimiter3(b, state)
			paired(b, "limits=3", func() {
				if ok, err := l.TryAcquire(1, 100, 100); !ok || err != nil {
					b.Fatalf("Limiter.TryAcquire = %v, %v", ok, err)
				}
			}, "limits=1", func() {
				if ok, err := bk.TryAcquire(1); !ok || err != nil {
					b.Fatalf("TryAcquire = %v, %v", ok, err)
				}
			})
		})
	}
}

// newLimiter3 returns a Limiter over three buckets in state.
func newLimiter3(b *testing.B, state string) *throttle.Limiter {
	b.Helper()
	var bs []*throttle.Bucket
	for range 3 {
		bs = append(bs, newThrottle(b, state))
	}
	l, err := throttle.NewLimiter(bs...)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkLimiterAcquireFree is the same comparison for Acquire when the
// tokens are there: the path an HTTP transport takes per request. The
// three-limit case returns a Permit.
func BenchmarkLimiterAcquireFree(b *testing.B) {
	ctx := b.Context()
	b.Run("limits=1", func(b *testing.B) {
		bk := newThrottle(b, "full")
		serialLoop(b, func() { bk.Acquire(ctx, 1) })
	})
	b.Run("limits=3", func(b *testing.B) {
		var bs []*throttle.Bucket
		for range 3 {
			bs = append(bs, newThrottle(b, "full"))
		}
		l, err := throttle.NewLimiter(bs...)
		if err != nil {
			b.Fatal(err)
		}
		serialLoop(b, func() { l.Acquire(ctx, 1, 100, 100) })
	})
}
