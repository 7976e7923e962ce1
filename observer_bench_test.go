package throttle_test

import (
	"io"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/slogthrottle"
)

// nopObserver discards every event: what remains is the cost of building
// and delivering them.
type nopObserver struct{}

func (nopObserver) Observe(throttle.Event) {}

// BenchmarkObserverTryAcquire measures TryAcquire with no observer, with
// one that discards events, and with a slogthrottle.Observer, whose grants here
// never wait and so are never logged. The bucket never runs dry, so every
// call grants.
func BenchmarkObserverTryAcquire(b *testing.B) {
	for _, c := range []struct {
		name string
		opts []throttle.Option
	}{
		{"none", nil},
		{"nop", []throttle.Option{throttle.WithObserver(nopObserver{})}},
		{"slog", []throttle.Option{throttle.WithObserver(
			slogthrottle.New(slog.New(slog.NewTextHandler(io.Discard, nil)), time.Second))}},
	} {
		bk, err := throttle.New(math.MaxInt64, throttle.Per(math.MaxInt64, time.Second), c.opts...)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ok, _ := bk.TryAcquire(1); !ok {
					b.Fatal("TryAcquire refused")
				}
			}
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if ok, _ := bk.TryAcquire(1); !ok {
						b.Error("TryAcquire refused")
						return
					}
				}
			})
		})
	}
}
