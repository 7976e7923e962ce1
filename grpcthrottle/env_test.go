package grpcthrottle_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/test/bufconn"

	"github.com/throttlekit/throttle"
)

// env is a gRPC server on an in-memory connection (bufconn) and a client
// of it: the interceptors as users install them, without a network.
type env struct {
	client testpb.TestServiceClient
	conn   *grpc.ClientConn
	svc    *service
}

func newEnv(t *testing.T, svc *service, srvOpts []grpc.ServerOption, dialOpts ...grpc.DialOption) *env {
	t.Helper()
	if svc == nil {
		svc = &service{}
	}
	svc.duplexDone = make(chan error, 16)
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(srvOpts...)
	testpb.RegisterTestServiceServer(srv, svc)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	opts := append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	}, dialOpts...)
	conn, err := grpc.NewClient("passthrough:///bufnet", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		<-done
	})
	return &env{client: testpb.NewTestServiceClient(conn), conn: conn, svc: svc}
}

// service is the test service: it echoes, counts the attempts it sees
// (with grpc-go's grpc-previous-rpc-attempts), and lets a test refuse
// calls or hold a stream.
type service struct {
	testpb.UnimplementedTestServiceServer
	mu       sync.Mutex
	calls    int      // UnaryCall handled, attempts included
	previous []string // grpc-previous-rpc-attempts of each attempt ("" for none)
	// refuse, if set, answers a unary call instead of the echo.
	refuse func(n int) error
	// unary, if set, runs in the handler with its context.
	unary func(ctx context.Context) error
	// duplexDone receives what each FullDuplexCall returns.
	duplexDone chan error
}

func (s *service) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	prev := ""
	if v := metadata.ValueFromIncomingContext(ctx, "grpc-previous-rpc-attempts"); len(v) > 0 {
		prev = v[0]
	}
	s.previous = append(s.previous, prev)
	refuse, unary := s.refuse, s.unary
	s.mu.Unlock()
	if refuse != nil {
		if err := refuse(n); err != nil {
			return nil, err
		}
	}
	if unary != nil {
		if err := unary(ctx); err != nil {
			return nil, err
		}
	}
	return &testpb.SimpleResponse{Payload: req.GetPayload(), Username: strconv.Itoa(n)}, nil
}

func (s *service) attempts() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, append([]string(nil), s.previous...)
}

// StreamingOutputCall sends one message per ResponseParameters, of its
// size.
func (s *service) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, stream testpb.TestService_StreamingOutputCallServer) error {
	for _, p := range req.GetResponseParameters() {
		msg := &testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: make([]byte, p.GetSize())}}
		if err := stream.Send(msg); err != nil {
			return err
		}
	}
	return nil
}

// FullDuplexCall echoes every message until the client closes or cancels.
func (s *service) FullDuplexCall(stream testpb.TestService_FullDuplexCallServer) (err error) {
	defer func() { s.duplexDone <- err }()
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		out := &testpb.StreamingOutputCallResponse{Payload: req.GetPayload()}
		if err := stream.Send(out); err != nil {
			return err
		}
	}
}

// limiter is a one-bucket Limiter named requests on clk.
func limiter(t testing.TB, clk clockwork.Clock, capacity int64, rate throttle.Rate, opts ...throttle.Option) *throttle.Limiter {
	t.Helper()
	b, err := throttle.New(capacity, rate, append([]throttle.Option{throttle.WithClock(clk), throttle.WithName("requests")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	l, err := throttle.NewLimiter(b)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func call(ctx context.Context, e *env, opts ...grpc.CallOption) (*testpb.SimpleResponse, error) {
	return e.client.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("hi")}}, opts...)
}

// waitForWaiters blocks until n timers are pending on clk (goroutines
// queued on a Gate of clk), or fails the test after a real minute.
func waitForWaiters(t *testing.T, clk *clockwork.FakeClock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := clk.BlockUntilContext(ctx, n); err != nil {
		t.Fatalf("waiting for %d waiters on the fake clock: %v", n, err)
	}
}

func metadataOut(ctx context.Context, kv ...string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, kv...)
}
