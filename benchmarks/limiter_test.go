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
			var bs []*throttle.Bucket
			for range 3 {
				bs = append(bs, newThrottle(b, state))
			}
			l, err := throttle.NewLimiter(bs...)
			if err != nil {
				b.Fatal(err)
			}
			serialLoop(b, func() { l.TryAcquire(1, 100, 100) })
		})
	}
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
