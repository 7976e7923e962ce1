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
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
)

// The load of the goal: 100 concurrent unary calls from 4 clients
// against a server that enforces 50 calls/s, burst 10, and refuses with
// RetryInfo. The floor is the time the quota needs for 100 calls: the
// burst at once, the 90 others at 50/s.
const (
	loadCalls   = 100
	loadClients = 4
	loadRate    = 50
	loadBurst   = 10
	loadFloor   = time.Duration(loadCalls-loadBurst) * time.Second / loadRate
)

// loadPolicy is the retryPolicy of the "policy" cases: what a service
// config for a Google API typically says, RESOURCE_EXHAUSTED included, so
// that grpc-go retries the refusals below the interceptor.
const loadPolicy = `{"methodConfig":[{"name":[{"service":"grpc.testing.TestService"}],
	"retryPolicy":{"maxAttempts":5,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,
	"retryableStatusCodes":["UNAVAILABLE","RESOURCE_EXHAUSTED"]}}]}`

// loadResult is one run of the load.
type loadResult struct {
	failed   int           // calls that returned an error
	attempts int           // attempts the server saw, refused ones included
	refused  int           // attempts the server refused
	most     int           // the most attempts one call made
	elapsed  time.Duration // from the first call to the last answer
}

// attemptCounter counts, before the server's interceptor decides, every
// attempt of every call (named by its payload) and each refusal.
type attemptCounter struct {
	mu      sync.Mutex
	perCall map[string]int
	refused int
}

func (c *attemptCounter) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if r, ok := req.(*testpb.SimpleRequest); ok {
		c.mu.Lock()
		c.perCall[string(r.GetPayload().GetBody())]++
		if status.Code(err) == codes.ResourceExhausted {
			c.refused++
		}
		c.mu.Unlock()
	}
	return resp, err
}

// clientGates returns the Gates of the load's clients: "shared", one Gate
// at the server's quota for all four (one process, four connections);
// "split", a Gate per client at a quarter of it (four processes sharing
// the quota by configuration: 12.5/s, burst 2); "none", no interceptor.
func clientGates(b *testing.B, kind string) []throttle.Gate {
	gates := make([]throttle.Gate, loadClients)
	switch kind {
	case "shared":
		g := limiter(b, clockwork.NewRealClock(), loadBurst, throttle.Per(loadRate, time.Second))
		for i := range gates {
			gates[i] = g
		}
	case "split":
		for i := range gates {
			gates[i] = limiter(b, clockwork.NewRealClock(), loadBurst/loadClients, throttle.Per(loadRate, loadClients*time.Second))
		}
	}
	return gates
}

func runLoad(b *testing.B, kind string, policy, withStats bool) loadResult {
	srvLim := limiter(b, clockwork.NewRealClock(), loadBurst, throttle.Per(loadRate, time.Second))
	// EmptyCall is free: it connects the clients before the load.
	free := func(_ context.Context, method string, _ any, g throttle.Gate) ([]int64, error) {
		if method == "/grpc.testing.TestService/EmptyCall" {
			return []int64{0}, nil
		}
		return []int64{1}, nil
	}
	counter := &attemptCounter{perCall: map[string]int{}}
	srv := grpcthrottle.NewServer(grpcthrottle.Shared(srvLim), grpcthrottle.WithCost(free))
	_, addr := loopback(b, echo{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(counter.intercept, srv.UnaryServerInterceptor())}, 0)
	gates := clientGates(b, kind)
	clients := make([]testpb.TestServiceClient, loadClients)
	for i := range clients {
		var opts []grpc.DialOption
		if policy {
			opts = append(opts, grpc.WithDefaultServiceConfig(loadPolicy))
		}
		if kind != "none" {
			cl := grpcthrottle.NewClient(grpcthrottle.Shared(gates[i]), grpcthrottle.WithCost(free))
			opts = append(opts, cl.DialOptions()...)
			if withStats {
				opts = append(opts, grpc.WithStatsHandler(cl.StatsHandler()))
			}
		}
		conn := dialLoopback(b, addr, opts...)
		clients[i] = testpb.NewTestServiceClient(conn)
		if _, err := clients[i].EmptyCall(context.Background(), &testpb.Empty{}); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, loadCalls)
	start := time.Now()
	for i := range loadCalls {
		wg.Go(func() {
			req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte(strconv.Itoa(i))}}
			_, errs[i] = clients[i%loadClients].UnaryCall(ctx, req)
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
	return r
}

// BenchmarkLoad runs the load of the goal, once per iteration,
// over loopback TCP in real time (about 2 s a run), and reports the
// medians of time/floor and refusals per call and the worst of the
// failures and of the attempts one call made. The cases: the clients'
// Gates (see clientGates), with and without grpc-go's retryPolicy
// (loadPolicy), and with the policy and the Client's StatsHandler.
// "none/policy" is grpc-go's retries alone, honouring the server's
// pushback.
func BenchmarkLoad(b *testing.B) {
	for _, tc := range []struct {
		kind, mode string
	}{
		{"shared", "no-policy"}, {"shared", "policy"}, {"shared", "policy+stats"},
		{"split", "no-policy"}, {"split", "policy"}, {"split", "policy+stats"},
		{"none", "no-policy"}, {"none", "policy"},
	} {
		name := tc.kind + "/" + tc.mode
		b.Run(name, func(b *testing.B) {
			var ratios, refusals []float64
			failed, most := 0, 0
			for b.Loop() {
				r := runLoad(b, tc.kind, tc.mode != "no-policy", tc.mode == "policy+stats")
				ratios = append(ratios, float64(r.elapsed)/float64(loadFloor))
				refusals = append(refusals, 100*float64(r.refused)/float64(loadCalls))
				failed = max(failed, r.failed)
				most = max(most, r.most)
				b.Logf("%s: %d failed, %d attempts, %d refused, at most %d attempts a call, %v (%.3fx the floor)",
					name, r.failed, r.attempts, r.refused, r.most, r.elapsed.Round(time.Millisecond), float64(r.elapsed)/float64(loadFloor))
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
