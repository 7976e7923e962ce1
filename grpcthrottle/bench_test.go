package grpcthrottle_test

import (
	"context"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
)

// loopback serves svc on 127.0.0.1 with srvOpts and returns clients of it
// made with dialOpts, and its address; everything stops at the end of the
// benchmark.
func loopback(tb testing.TB, svc testpb.TestServiceServer, srvOpts []grpc.ServerOption, clients int, dialOpts ...grpc.DialOption) ([]*grpc.ClientConn, string) {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := grpc.NewServer(srvOpts...)
	testpb.RegisterTestServiceServer(srv, svc)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	tb.Cleanup(func() {
		srv.Stop()
		<-done
	})
	conns := make([]*grpc.ClientConn, clients)
	for i := range conns {
		conns[i] = dialLoopback(tb, lis.Addr().String(), dialOpts...)
	}
	return conns, lis.Addr().String()
}

// dialLoopback returns a client of addr, closed at the end of the test.
func dialLoopback(tb testing.TB, addr string, dialOpts ...grpc.DialOption) *grpc.ClientConn {
	tb.Helper()
	conn, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dialOpts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return conn
}

func first(conns []*grpc.ClientConn, _ string) *grpc.ClientConn { return conns[0] }

type echo struct {
	testpb.UnimplementedTestServiceServer
}

func (echo) UnaryCall(_ context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{Payload: req.GetPayload()}, nil
}

func (echo) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

func plentiful(tb testing.TB) *throttle.Limiter {
	return limiter(tb, clockwork.NewRealClock(), 1<<60, throttle.Per(1<<40, time.Second))
}

func passUnaryClient(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(ctx, method, req, reply, cc, opts...)
}

func passUnaryServer(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	return handler(ctx, req)
}

// BenchmarkEcho times unary echo calls over loopback TCP, alternating
// bare calls with calls through the case's interceptors (and which of the
// two goes first), with tokens always available, as BenchmarkRoundTrip
// does for the HTTP Transport. Both kinds go over one connection to one
// server: a switch interceptor on each side sends a call through the
// case's interceptor or straight on, by a context value on the client and
// the metadata x-on ("1" or "0", the same size) on the server, so that the
// two differ by the interceptors alone. overhead-% is the median of the
// pairs' differences over the median bare call; "do-nothing" interceptors,
// which only call through, are the floor of the method.
func BenchmarkEcho(b *testing.B) {
	for _, tc := range []struct {
		name   string
		server func(b *testing.B) grpc.UnaryServerInterceptor
		client func(b *testing.B) grpc.UnaryClientInterceptor
	}{
		{"do-nothing", func(*testing.B) grpc.UnaryServerInterceptor { return passUnaryServer },
			func(*testing.B) grpc.UnaryClientInterceptor { return passUnaryClient }},
		{"client", nil, func(b *testing.B) grpc.UnaryClientInterceptor {
			return grpcthrottle.NewClient(grpcthrottle.Shared(plentiful(b))).UnaryClientInterceptor()
		}},
		{"server", func(b *testing.B) grpc.UnaryServerInterceptor {
			return grpcthrottle.NewServer(grpcthrottle.Shared(plentiful(b))).UnaryServerInterceptor()
		}, nil},
		{"server-quota-on-admit", func(b *testing.B) grpc.UnaryServerInterceptor {
			return grpcthrottle.NewServer(grpcthrottle.Shared(plentiful(b)), grpcthrottle.WithQuotaOnAdmit()).UnaryServerInterceptor()
		}, nil},
		{"both", func(b *testing.B) grpc.UnaryServerInterceptor {
			return grpcthrottle.NewServer(grpcthrottle.Shared(plentiful(b))).UnaryServerInterceptor()
		}, func(b *testing.B) grpc.UnaryClientInterceptor {
			return grpcthrottle.NewClient(grpcthrottle.Shared(plentiful(b))).UnaryClientInterceptor()
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srvInner, cliInner := grpc.UnaryServerInterceptor(passUnaryServer), grpc.UnaryClientInterceptor(passUnaryClient)
			if tc.server != nil {
				srvInner = tc.server(b)
			}
			if tc.client != nil {
				cliInner = tc.client(b)
			}
			runEchoCase(b, srvInner, cliInner)
		})
	}
}

type switchKey struct{}

// runEchoCase alternates bare calls with calls through srvInner and
// cliInner over one connection, and reports the overhead.
func runEchoCase(b *testing.B, srvInner grpc.UnaryServerInterceptor, cliInner grpc.UnaryClientInterceptor) {
	srvSwitch := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if v := metadata.ValueFromIncomingContext(ctx, "x-on"); len(v) == 1 && v[0] == "1" {
			return srvInner(ctx, req, info, handler)
		}
		return handler(ctx, req)
	}
	cliSwitch := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if on, _ := ctx.Value(switchKey{}).(bool); on {
			return cliInner(ctx, method, req, reply, cc, invoker, opts...)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	conn := first(loopback(b, echo{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(srvSwitch)}, 1, grpc.WithChainUnaryInterceptor(cliSwitch)))
	c := testpb.NewTestServiceClient(conn)
	bareCtx := context.WithValue(metadata.AppendToOutgoingContext(context.Background(), "x-on", "0"), switchKey{}, false)
	overCtx := context.WithValue(metadata.AppendToOutgoingContext(context.Background(), "x-on", "1"), switchKey{}, true)
	req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("ping")}}
	once := func(ctx context.Context) time.Duration {
		start := time.Now()
		if _, err := c.UnaryCall(ctx, req); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for range 100 { // connect, and warm both paths
		once(bareCtx)
		once(overCtx)
	}
	var bs, os []time.Duration
	first := true
	for b.Loop() {
		if first {
			bs = append(bs, once(bareCtx))
			os = append(os, once(overCtx))
		} else {
			os = append(os, once(overCtx))
			bs = append(bs, once(bareCtx))
		}
		first = !first
	}
	reportOverhead(b, bs, os)
}

func reportOverhead(b *testing.B, bare, over []time.Duration) {
	diff := make([]time.Duration, len(bare))
	for i := range bare {
		diff[i] = over[i] - bare[i]
	}
	medBare := median(bare)
	b.ReportMetric(float64(medBare), "bare-ns/op")
	b.ReportMetric(float64(median(over)), "wrapped-ns/op")
	b.ReportMetric(100*float64(median(diff))/float64(medBare), "overhead-%")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkAdmitAllocs counts the allocations of one loopback echo call,
// client and server together, bare and through the case's interceptors:
// allocs-over is what the interceptors and the Gate add to it; the
// do-nothing cases are what grpc-go itself allocates for any interceptor
// (its UnaryServerInfo and handler closure on the server).
func BenchmarkAdmitAllocs(b *testing.B) {
	for _, tc := range []struct {
		name   string
		server func(b *testing.B) []grpc.ServerOption
		client func(b *testing.B) []grpc.DialOption
	}{
		{"do-nothing-client", nil, func(*testing.B) []grpc.DialOption {
			return []grpc.DialOption{grpc.WithChainUnaryInterceptor(passUnaryClient)}
		}},
		{"client", nil, func(b *testing.B) []grpc.DialOption {
			return grpcthrottle.NewClient(grpcthrottle.Shared(plentiful(b))).DialOptions()
		}},
		{"do-nothing-server", func(*testing.B) []grpc.ServerOption {
			return []grpc.ServerOption{grpc.ChainUnaryInterceptor(passUnaryServer)}
		}, nil},
		{"server", func(b *testing.B) []grpc.ServerOption {
			return grpcthrottle.NewServer(grpcthrottle.Shared(plentiful(b))).ServerOptions()
		}, nil},
		{"server-handler-permit", func(b *testing.B) []grpc.ServerOption {
			return grpcthrottle.NewServer(grpcthrottle.Shared(plentiful(b)), grpcthrottle.WithHandlerPermit()).ServerOptions()
		}, nil},
		{"server-quota-on-admit", func(b *testing.B) []grpc.ServerOption {
			return grpcthrottle.NewServer(grpcthrottle.Shared(plentiful(b)), grpcthrottle.WithQuotaOnAdmit()).ServerOptions()
		}, nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			bare := testpb.NewTestServiceClient(first(loopback(b, echo{}, nil, 1)))
			var srvOpts []grpc.ServerOption
			var dialOpts []grpc.DialOption
			if tc.server != nil {
				srvOpts = tc.server(b)
			}
			if tc.client != nil {
				dialOpts = tc.client(b)
			}
			over := testpb.NewTestServiceClient(first(loopback(b, echo{}, srvOpts, 1, dialOpts...)))
			ctx := context.Background()
			req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("ping")}}
			allocs := func(c testpb.TestServiceClient) float64 {
				var ms runtime.MemStats
				const n = 2000
				runtime.ReadMemStats(&ms)
				before := ms.Mallocs
				for range n {
					if _, err := c.UnaryCall(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
				runtime.ReadMemStats(&ms)
				return float64(ms.Mallocs-before) / n
			}
			allocs(bare)
			allocs(over)
			var bs, os []float64
			for b.Loop() {
				bs = append(bs, allocs(bare))
				os = append(os, allocs(over))
			}
			slices.Sort(bs)
			slices.Sort(os)
			b.ReportMetric(bs[len(bs)/2], "allocs-bare/call")
			b.ReportMetric(os[len(os)/2]-bs[len(bs)/2], "allocs-over/call")
		})
	}
}
