package otelthrottle_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/otelthrottle"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// BenchmarkTryAcquire measures TryAcquire on a bucket reporting to an
// Observer on the OpenTelemetry SDK: one counter increment and one
// histogram record per grant. Compare with the root package's
// BenchmarkObserverTryAcquire/none.
func BenchmarkTryAcquire(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	o, err := otelthrottle.New(mp.Meter("bench"))
	if err != nil {
		b.Fatal(err)
	}
	bk, err := throttle.New(math.MaxInt64, throttle.Per(math.MaxInt64, time.Second),
		throttle.WithName("tokens"), throttle.WithObserver(o))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ok, _ := bk.TryAcquire(1); !ok {
				b.Fatal("TryAcquire refused")
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
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
