package grpcthrottle_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
)

// oneEach is a MessageCostFunc of 1 a message, for the direction given.
func oneEach(received bool) grpcthrottle.MessageCostFunc {
	return func(_ string, _ any, r bool) []int64 {
		if r == received {
			return []int64{1}
		}
		return nil
	}
}

// opensFree costs nothing to open a stream, 1 for a unary call.
func opensFree(_ context.Context, _ string, req any, _ throttle.Gate) ([]int64, error) {
	if req == nil {
		return []int64{0}, nil
	}
	return []int64{1}, nil
}

func streamOf(n int) *testpb.StreamingOutputCallRequest {
	req := &testpb.StreamingOutputCallRequest{}
	for range n {
		req.ResponseParameters = append(req.ResponseParameters, &testpb.ResponseParameters{Size: 1})
	}
	return req
}

// A server-streaming call metered per message on the server: each message
// the handler sends waits its turn, so 5 messages on a limit of 2 and one
// a second come as 2 at once, then one a second.
func TestServerStreamMeteredPerMessage(t *testing.T) {
	clk := clockwork.NewFakeClock()
	lim := limiter(t, clk, 2, throttle.Per(1, time.Second))
	srv := grpcthrottle.NewServer(grpcthrottle.Shared(lim), grpcthrottle.WithCost(opensFree), grpcthrottle.WithMessageCost(oneEach(false)))
	e := newEnv(t, nil, srv.ServerOptions())
	stream, err := e.client.StreamingOutputCall(context.Background(), streamOf(5))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if i >= 2 {
			waitForWaiters(t, clk, 1) // the handler's next Send waits
			clk.Advance(time.Second)
		}
		if _, err := stream.Recv(); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("after 5 messages: %v, want EOF", err)
	}
	if got := lim.Bucket("requests").Status().Level; got != 0 {
		t.Errorf("level %v after 5 messages over 3 s, want 0", got)
	}
}

// The same metered on the client, per message received: a message is
// returned once its cost is taken.
func TestClientStreamMeteredPerMessage(t *testing.T) {
	clk := clockwork.NewFakeClock()
	lim := limiter(t, clk, 2, throttle.Per(1, time.Second))
	cl := grpcthrottle.NewClient(grpcthrottle.Shared(lim), grpcthrottle.WithClock(clk),
		grpcthrottle.WithCost(opensFree), grpcthrottle.WithMessageCost(oneEach(true)))
	e := newEnv(t, nil, nil, cl.DialOptions()...)
	stream, err := e.client.StreamingOutputCall(context.Background(), streamOf(4))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error)
	go func() {
		for {
			_, err := stream.Recv()
			got <- err
			if err != nil {
				return
			}
		}
	}()
	for i := range 4 {
		if i >= 2 {
			waitForWaiters(t, clk, 1)
			select {
			case err := <-got:
				t.Fatalf("message %d returned before its cost was covered: %v", i, err)
			default:
			}
			clk.Advance(time.Second)
		}
		if err := <-got; err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if err := <-got; err != io.EOF {
		t.Fatalf("after 4 messages: %v, want EOF", err)
	}
}

// A bidirectional stream cancelled mid-way spends nothing it did not use:
// the client's send that waits for its cost when the stream is cancelled
// takes nothing, and neither does the server's receive that waits.
func TestBidiCancelledMidwaySpendsNothingUnused(t *testing.T) {
	t.Run("client meters sends", func(t *testing.T) {
		clk := clockwork.NewFakeClock()
		lim := limiter(t, clk, 3, throttle.Per(1, time.Minute))
		cl := grpcthrottle.NewClient(grpcthrottle.Shared(lim), grpcthrottle.WithClock(clk),
			grpcthrottle.WithCost(opensFree), grpcthrottle.WithMessageCost(oneEach(false)))
		e := newEnv(t, nil, nil, cl.DialOptions()...)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stream, err := e.client.FullDuplexCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		msg := &testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte("x")}}
		for i := range 3 {
			if err := stream.Send(msg); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
			if _, err := stream.Recv(); err != nil {
				t.Fatalf("echo %d: %v", i, err)
			}
		}
		sent := make(chan error, 1)
		go func() { sent <- stream.Send(msg) }()
		waitForWaiters(t, clk, 1) // the fourth send waits for a token
		cancel()
		err = <-sent
		if !errors.Is(err, context.Canceled) && status.Code(err) != codes.Canceled && err != io.EOF {
			t.Fatalf("the cancelled send: %v", err)
		}
		clk.Advance(time.Minute)
		if got := lim.Bucket("requests").Status().Level; got != 1 {
			t.Errorf("level %v a refill after the cancel, want 1: the cancelled send took nothing", got)
		}
	})
	t.Run("server meters receives", func(t *testing.T) {
		clk := clockwork.NewFakeClock()
		lim := limiter(t, clk, 3, throttle.Per(1, time.Minute))
		srv := grpcthrottle.NewServer(grpcthrottle.Shared(lim), grpcthrottle.WithCost(opensFree), grpcthrottle.WithMessageCost(oneEach(true)))
		e := newEnv(t, nil, srv.ServerOptions())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stream, err := e.client.FullDuplexCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		msg := &testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte("x")}}
		for i := range 4 {
			if err := stream.Send(msg); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
		for i := range 3 {
			if _, err := stream.Recv(); err != nil {
				t.Fatalf("echo %d: %v", i, err)
			}
		}
		waitForWaiters(t, clk, 1) // the server's fourth receive waits
		cancel()
		if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
			t.Fatalf("after the cancel: %v, want Canceled", err)
		}
		if err := <-e.svc.duplexDone; status.Code(err) != codes.Canceled {
			t.Fatalf("the handler ended with %v, want Canceled (its wait ended with the stream)", err)
		}
		clk.Advance(time.Minute)
		if got := lim.Bucket("requests").Status().Level; got != 1 {
			t.Errorf("level %v a refill after the cancel, want 1: the waiting receive took nothing", got)
		}
	})
}

// A stream the server refuses gives back the client's permit and heeds
// the RetryInfo; it is not re-sent.
func TestClientStreamRefused(t *testing.T) {
	clk := clockwork.NewFakeClock()
	srvLim := limiter(t, clk, 1, throttle.Per(1, 2*time.Second))
	srv := grpcthrottle.NewServer(grpcthrottle.Shared(srvLim))
	// Named apart from the server's limit, so that the QuotaFailure
	// (naming "requests") does not empty it.
	b, _ := throttle.New(5, throttle.Per(5, time.Second), throttle.WithClock(clk), throttle.WithName("calls"))
	cliLim, _ := throttle.NewLimiter(b)
	cl := grpcthrottle.NewClient(grpcthrottle.Shared(cliLim), grpcthrottle.WithClock(clk))
	e := newEnv(t, nil, srv.ServerOptions(), cl.DialOptions()...)
	ctx := context.Background()
	if _, err := call(ctx, e); err != nil {
		t.Fatal(err)
	}
	stream, err := e.client.StreamingOutputCall(ctx, streamOf(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("%v, want ResourceExhausted", err)
	}
	if got := cliLim.Bucket("calls").Status().Level; got != 4 {
		t.Errorf("client level %v, want 4: the refused stream's permit given back", got)
	}
	if got, _ := cliLim.WaitTime(1); got != 2*time.Second {
		t.Errorf("client Gate paused for %v, want the server's 2s", got)
	}
}
