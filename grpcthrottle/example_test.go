package grpcthrottle_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
)

// A server that allows one call a second, and a client that does not know
// it: the server refuses the client's second call with an exact RetryInfo,
// and the client pauses its Gate for that long and sends the call again.
// (A fake clock stands in for the second of waiting.)
func Example() {
	clk := clockwork.NewFakeClock()

	// The server: one call a second, refused with RetryInfo beyond that.
	serverQuota, _ := throttle.New(1, throttle.Per(1, time.Second), throttle.WithClock(clk), throttle.WithName("requests"))
	serverGate, _ := throttle.NewLimiter(serverQuota)
	server := grpcthrottle.NewServer(grpcthrottle.Shared(serverGate))
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(server.ServerOptions()...)
	testpb.RegisterTestServiceServer(srv, echo{})
	go srv.Serve(lis)
	defer srv.Stop()

	// The client: its own Gate allows ten a second.
	clientQuota, _ := throttle.New(10, throttle.Per(10, time.Second), throttle.WithClock(clk), throttle.WithName("calls"))
	clientGate, _ := throttle.NewLimiter(clientQuota)
	client := grpcthrottle.NewClient(grpcthrottle.Shared(clientGate), grpcthrottle.WithClock(clk))
	conn, err := grpc.NewClient("passthrough:///bufnet", append(client.DialOptions(),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	echoes := testpb.NewTestServiceClient(conn)
	ctx := context.Background()
	req := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("hello")}}

	if _, err := echoes.UnaryCall(ctx, req); err == nil {
		fmt.Println("first call: admitted")
	}

	// What a client without the interceptors would get.
	plain := plainConn(lis)
	defer plain.Close()
	_, err = testpb.NewTestServiceClient(plain).UnaryCall(ctx, req)
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			fmt.Printf("plain client: %v, retry in %v\n", status.Code(err), ri.GetRetryDelay().AsDuration())
		}
	}

	// The intercepted call is refused too, then waits out the pause.
	done := make(chan error)
	go func() {
		_, err := echoes.UnaryCall(ctx, req)
		done <- err
	}()
	_ = clk.BlockUntilContext(ctx, 1) // the re-send waits behind the pause
	wait := clientGate.Status(nil)[0].Paused.Sub(clk.Now())
	fmt.Printf("client Gate paused for %v\n", wait)
	clk.Advance(wait)
	if err := <-done; err == nil {
		fmt.Println("second call: admitted after the pause")
	}
	// Output:
	// first call: admitted
	// plain client: ResourceExhausted, retry in 1s
	// client Gate paused for 1s
	// second call: admitted after the pause
}

// plainConn is a client of lis without interceptors.
func plainConn(lis *bufconn.Listener) *grpc.ClientConn {
	conn, _ := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	return conn
}
