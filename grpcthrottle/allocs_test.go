package grpcthrottle_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
)

// stubGate is a Gate that always admits and allocates nothing, so that
// what an interceptor allocates can be told from what a Gate does.
type stubGate struct {
	p      stubPermit
	limits []throttle.Limit
}

type stubPermit struct{}

func (stubPermit) Costs() []int64        { return nil }
func (stubPermit) Settle(...int64) error { return nil }
func (stubPermit) Cancel() error         { return nil }

func (g *stubGate) Acquire(context.Context, ...int64) (throttle.Permit, error) { return &g.p, nil }
func (g *stubGate) TryAcquirePermit(...int64) (throttle.Permit, bool, error) {
	return &g.p, true, nil
}
func (g *stubGate) WaitTime(...int64) (time.Duration, error) { return 0, nil }
func (g *stubGate) Limits() []throttle.Limit                 { return g.limits }

// The admit path, measured on the interceptors alone with a stub invoker
// and handler: neither allocates anything of its own, and over a Limiter,
// a throttle.Taker, a call takes its costs without a Permit. A Gate that
// is no Taker allocates its Permit; WithHandlerPermit costs the context
// that carries the Permit to the handler. (The figures on a loopback call,
// against grpc-go's own, are in BenchmarkAdmitAllocs.)
func TestAdmitAllocations(t *testing.T) {
	gate := &stubGate{limits: []throttle.Limit{{Name: "requests"}}}
	lim := limiter(t, clockwork.NewRealClock(), 1<<60, throttle.Per(1<<40, time.Second))
	req, reply := &testpb.SimpleRequest{}, &testpb.SimpleResponse{}
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	handler := func(context.Context, any) (any, error) { return reply, nil }
	info := &grpc.UnaryServerInfo{FullMethod: "/grpc.testing.TestService/UnaryCall"}
	ctx := context.Background()
	client := func(g throttle.Gate) func() {
		f := grpcthrottle.NewClient(grpcthrottle.Shared(g)).UnaryClientInterceptor()
		return func() { _ = f(ctx, info.FullMethod, req, reply, nil, invoker) }
	}
	server := func(opts ...grpcthrottle.Option) func(g throttle.Gate) func() {
		return func(g throttle.Gate) func() {
			f := grpcthrottle.NewServer(grpcthrottle.Shared(g), opts...).UnaryServerInterceptor()
			return func() { _, _ = f(ctx, req, info, handler) }
		}
	}
	for _, tc := range []struct {
		name string
		gate throttle.Gate
		run  func(g throttle.Gate) func()
		want float64
	}{
		{"client, stub gate", gate, client, 0},
		{"client, Limiter (a Taker: no Permit)", lim, client, 0},
		{"server, stub gate", gate, server(), 0},
		{"server, Limiter (a Taker: no Permit)", lim, server(), 0},
		{"server, stub gate, WithHandlerPermit (the Permit's context)", gate, server(grpcthrottle.WithHandlerPermit()), 1},
		{"server, Limiter, WithHandlerPermit (the context and the Permit)", lim, server(grpcthrottle.WithHandlerPermit()), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := tc.run(tc.gate)
			run()
			if got := testing.AllocsPerRun(1000, run); got != tc.want {
				t.Errorf("%v allocations a call, want %v", got, tc.want)
			}
		})
	}
}
