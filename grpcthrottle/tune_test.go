package grpcthrottle_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
)

// The congestion rule on a fake clock, through the interceptor with a
// stub invoker that refuses what the test says: a refusal whose RetryInfo
// is longer than the Gate's spacing halves the rate and the capacity, once
// for the calls sent before it; a short one is forgiven once, then steps
// the rate down; successes after RecoverAfter raise it a step at a time,
// and at the configured rate the Gate is as configured.
func TestClientTunesToTheServer(t *testing.T) {
	clk := clockwork.NewFakeClock()
	lim := limiter(t, clk, 10, throttle.Per(40, time.Second))
	cl := grpcthrottle.NewClient(grpcthrottle.Shared(lim), grpcthrottle.WithClock(clk), grpcthrottle.WithRetries(0))
	f := cl.UnaryClientInterceptor()
	var answer error
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return answer }
	ctx := context.Background()
	callWith := func(err error) {
		t.Helper()
		answer = err
		got := f(ctx, "/grpc.testing.TestService/UnaryCall", &testpb.SimpleRequest{}, &testpb.SimpleResponse{}, nil, invoker)
		if (got == nil) != (err == nil) {
			t.Fatalf("call: %v, want %v", got, err)
		}
	}
	want := func(rate throttle.Rate, capacity int64, st grpcthrottle.ClientStats) {
		t.Helper()
		s := lim.Status(nil)[0]
		if s.Rate.String() != rate.String() || s.Capacity != capacity {
			t.Errorf("%v, capacity %d; want %v, capacity %d", s.Rate, s.Capacity, rate, capacity)
		}
		if got := cl.Stats(); got != st {
			t.Errorf("stats %+v, want %+v", got, st)
		}
	}
	long := refusal(t, codes.ResourceExhausted, 50*time.Millisecond, "")
	short := refusal(t, codes.ResourceExhausted, time.Millisecond, "")

	callWith(nil)
	want(throttle.Per(40, time.Second), 10, grpcthrottle.ClientStats{})
	// Two calls sent together; both refused for 50 ms, longer than the
	// spacing of 25 ms: one halving.
	answer = long
	done := make(chan struct{})
	sent, hold := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_ = f(ctx, "/m", nil, nil, nil, func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			close(sent)
			<-hold
			return long
		})
	}()
	<-sent
	callWith(long)
	close(hold)
	<-done
	want(throttle.Per(20, time.Second), 5, grpcthrottle.ClientStats{Refused: 2, Lowered: 1})

	clk.Advance(time.Second)
	callWith(nil)
	// A short refusal, within the spacing of 50 ms: forgiven.
	callWith(short)
	want(throttle.Per(20, time.Second), 5, grpcthrottle.ClientStats{Refused: 3, Lowered: 1})
	// Another within forgiveCalls answers: one step down, 15/16 of 20/s.
	clk.Advance(time.Second)
	callWith(nil)
	callWith(short)
	want(throttle.Per(35, 2*time.Second), 4, grpcthrottle.ClientStats{Refused: 4, Lowered: 2})

	// Recovery: a step per RecoverAfter with successes.
	clk.Advance(grpcthrottle.RecoverAfter - time.Nanosecond)
	callWith(nil)
	want(throttle.Per(35, 2*time.Second), 4, grpcthrottle.ClientStats{Refused: 4, Lowered: 2})
	clk.Advance(time.Nanosecond)
	callWith(nil)
	want(throttle.Per(20, time.Second), 5, grpcthrottle.ClientStats{Refused: 4, Lowered: 2, Raised: 1})
	for range 8 {
		clk.Advance(grpcthrottle.RecoverAfter)
		callWith(nil)
	}
	want(throttle.Per(40, time.Second), 10, grpcthrottle.ClientStats{Refused: 4, Lowered: 2, Raised: 8, Restored: 1})
}
