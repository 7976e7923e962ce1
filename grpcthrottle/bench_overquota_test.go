package grpcthrottle_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
)

// The load of issue 43: a vendor that enforces 20 calls/s, burst 5, and
// refuses with RetryInfo; 40 concurrent unary calls on one connection,
// from a client whose Gate is at the vendor's quota ("at-quota") or
// configured at twice it ("2x": 40/s, burst 10). The floor is the time
// the vendor's quota needs: the burst at once, the 35 others at 20/s.
const (
	oqCalls = 40
	oqRate  = 20
	oqBurst = 5
	oqFloor = time.Duration(oqCalls-oqBurst) * time.Second / oqRate
)

func runOverQuota(b *testing.B, factor int64) (loadResult, grpcthrottle.ClientStats) {
	srvLim := limiter(b, clockwork.NewRealClock(), oqBurst, throttle.Per(oqRate, time.Second))
	free := func(_ context.Context, method string, _ any, g throttle.Gate) ([]int64, error) {
		if method == "/grpc.testing.TestService/EmptyCall" {
			return []int64{0}, nil
		}
		return []int64{1}, nil
	}
	counter := &attemptCounter{perCall: map[string]int{}}
	srv := grpcthrottle.NewServer(grpcthrottle.Shared(srvLim), grpcthrottle.WithCost(free))
	_, addr := loopback(b, echo{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(counter.intercept, srv.UnaryServerInterceptor())}, 0)
	gate := limiter(b, clockwork.NewRealClock(), oqBurst*factor, throttle.Per(oqRate*factor, time.Second))
	cl := grpcthrottle.NewClient(grpcthrottle.Shared(gate), grpcthrottle.WithCost(free))
	client := testpb.NewTestServiceClient(dialLoopback(b, addr, cl.DialOptions()...))
	if _, err := client.EmptyCall(context.Background(), &testpb.Empty{}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, oqCalls)
	start := time.Now()
	for i := range oqCalls {
		wg.Go(func() {
			req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte(strconv.Itoa(i))}}
			_, errs[i] = client.UnaryCall(ctx, req)
		})
	}
	wg.Wait()
	r := loadResult{elapsed: time.Since(start)}
	for _, err := range errs {
		if err != nil {
			r.failed++
		}
	}
	counter.mu.Lock()
	defer counter.mu.Unlock()
	r.refused = counter.refused
	for _, n := range counter.perCall {
		r.attempts += n
		r.most = max(r.most, n)
	}
	return r, cl.Stats()
}

// BenchmarkOverQuota runs issue 43's load once per iteration over loopback
// TCP in real time (about 2 s a run) and reports the medians of
// time/floor and of refusals per call, and the worst of the failures and
// of the attempts one call made.
func BenchmarkOverQuota(b *testing.B) {
	for _, tc := range []struct {
		name   string
		factor int64
	}{{"at-quota", 1}, {"2x", 2}} {
		b.Run(tc.name, func(b *testing.B) {
			var ratios, refusals []float64
			failed, most := 0, 0
			for b.Loop() {
				r, st := runOverQuota(b, tc.factor)
				ratios = append(ratios, float64(r.elapsed)/float64(oqFloor))
				refusals = append(refusals, 100*float64(r.refused)/float64(oqCalls))
				failed = max(failed, r.failed)
				most = max(most, r.most)
				b.Logf("%s: %d failed, %d attempts, %d refused, at most %d attempts a call, %v (%.3fx the floor); client %+v",
					tc.name, r.failed, r.attempts, r.refused, r.most, r.elapsed.Round(time.Millisecond), float64(r.elapsed)/float64(oqFloor), st)
			}
			slices.Sort(ratios)
			slices.Sort(refusals)
			b.ReportMetric(ratios[len(ratios)/2], "time/floor")
			b.ReportMetric(ratios[len(ratios)-1], "time/floor-max")
			b.ReportMetric(refusals[len(refusals)/2], "refused-%")
			b.ReportMetric(refusals[len(refusals)-1], "refused-%-max")
			b.ReportMetric(float64(failed), "failed-max")
			b.ReportMetric(float64(most), "attempts/call-max")
		})
	}
}
