package otelthrottle_test

import (
	"context"
	"fmt"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/otelthrottle"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// An Observer counts the decisions of the buckets it is given to and
// reports their levels. A program passes its own meter, usually
// otel.Meter("..."); here a manual reader shows what an exporter would
// receive.
func Example() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(ctx)

	obs, err := otelthrottle.New(provider.Meter("example"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer obs.Close()
	// Ten requests a minute, refilled one every six seconds.
	requests, err := throttle.New(10, throttle.Per(10, time.Minute),
		throttle.WithName("requests"), throttle.WithObserver(obs))
	if err != nil {
		fmt.Println(err)
		return
	}
	obs.Watch(requests) // for the throttle.level gauge

	for range 12 {
		requests.TryAcquire(1)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				limit, _ := p.Attributes.Value(otelthrottle.LimitKey)
				fmt.Printf("%s{%s} %d\n", m.Name, limit.AsString(), p.Value)
			}
		case metricdata.Gauge[float64]:
			for _, p := range d.DataPoints {
				limit, _ := p.Attributes.Value(otelthrottle.LimitKey)
				fmt.Printf("%s{%s} %.0f\n", m.Name, limit.AsString(), p.Value)
			}
		}
	}
	// Output:
	// throttle.granted{requests} 10
	// throttle.rejected{requests} 2
	// throttle.level{requests} 0
}
