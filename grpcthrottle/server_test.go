package grpcthrottle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
)

func details(t *testing.T, err error) (*errdetails.RetryInfo, *errdetails.QuotaFailure) {
	t.Helper()
	s, _ := status.FromError(err)
	var ri *errdetails.RetryInfo
	var qf *errdetails.QuotaFailure
	for _, d := range s.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			ri = d
		case *errdetails.QuotaFailure:
			qf = d
		}
	}
	return ri, qf
}

// A server admits what its Gate covers now and refuses the rest with
// ResourceExhausted, an exact RetryInfo (WaitTime's, to the nanosecond),
// a QuotaFailure naming the limit, the pushback in whole milliseconds
// rounded up, and the quota's state in the trailer of every call (of
// every refusal by default, see TestServerQuotaTrailerDefault).
func TestServerRefusesWithExactRetryInfo(t *testing.T) {
	clk := clockwork.NewFakeClock()
	lim := limiter(t, clk, 2, throttle.Per(3, time.Second)) // a token every 333.333334 ms
	srv := grpcthrottle.NewServer(grpcthrottle.Shared(lim), grpcthrottle.WithQuotaOnAdmit())
	e := newEnv(t, nil, srv.ServerOptions())
	ctx := context.Background()

	for i := range 2 {
		var tr metadata.MD
		if _, err := call(ctx, e, grpc.Trailer(&tr)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got, want := tr.Get(grpcthrottle.RateLimitKey), []string{`"requests";r=` + []string{"1", "0"}[i] + ";t=1"}; len(got) != 1 || got[0] != want[0] {
			t.Errorf("call %d: trailer %s = %q, want %q", i, grpcthrottle.RateLimitKey, got, want)
		}
		if got := tr.Get(grpcthrottle.PolicyKey); len(got) != 1 || got[0] != `"requests";q=3;w=1` {
			t.Errorf("call %d: trailer %s = %q", i, grpcthrottle.PolicyKey, got)
		}
		if got := tr.Get(grpcthrottle.PushbackKey); got != nil {
			t.Errorf("call %d: an admitted call has a pushback %q", i, got)
		}
	}
	want, err := lim.WaitTime(1)
	if err != nil || want != 333333334*time.Nanosecond {
		t.Fatalf("WaitTime = %v, %v", want, err)
	}
	var tr metadata.MD
	_, err = call(ctx, e, grpc.Trailer(&tr))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("third call: %v, want ResourceExhausted", err)
	}
	ri, qf := details(t, err)
	if ri == nil || ri.GetRetryDelay().AsDuration() != want {
		t.Errorf("RetryInfo = %v, want a retry_delay of exactly %v", ri, want)
	}
	if qf == nil || len(qf.GetViolations()) != 1 || qf.GetViolations()[0].GetQuotaId() != "requests" ||
		qf.GetViolations()[0].GetSubject() != "/grpc.testing.TestService/UnaryCall" {
		t.Errorf("QuotaFailure = %v, want one violation of requests", qf)
	}
	if got := tr.Get(grpcthrottle.PushbackKey); len(got) != 1 || got[0] != "334" {
		t.Errorf("pushback = %q, want 334", got)
	}
	if got := tr.Get(grpcthrottle.RateLimitKey); len(got) != 1 || got[0] != `"requests";r=0;t=1` {
		t.Errorf("refusal's %s = %q", grpcthrottle.RateLimitKey, got)
	}
	if n, _ := e.svc.attempts(); n != 2 {
		t.Errorf("the handler ran %d times, want 2", n)
	}

	// A client that waits exactly the RetryInfo is admitted; a nanosecond
	// less is not.
	clk.Advance(want - 1)
	if _, err := call(ctx, e); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a nanosecond early: %v", err)
	}
	clk.Advance(1)
	if _, err := call(ctx, e); err != nil {
		t.Fatalf("after the RetryInfo: %v", err)
	}
}

// A call that could never be admitted is refused without a RetryInfo and
// with a pushback that asks grpc-go's retry policy not to retry.
func TestServerRefusesTheImpossible(t *testing.T) {
	clk := clockwork.NewFakeClock()
	lim := limiter(t, clk, 2, throttle.Per(1, time.Second))
	srv := grpcthrottle.NewServer(grpcthrottle.Shared(lim), grpcthrottle.WithCost(
		func(context.Context, string, any, throttle.Gate) ([]int64, error) { return []int64{3}, nil }))
	e := newEnv(t, nil, srv.ServerOptions())
	var tr metadata.MD
	_, err := call(context.Background(), e, grpc.Trailer(&tr))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("%v, want ResourceExhausted", err)
	}
	ri, qf := details(t, err)
	if ri != nil || qf == nil || qf.GetViolations()[0].GetQuotaId() != "requests" {
		t.Errorf("RetryInfo %v (want none), QuotaFailure %v", ri, qf)
	}
	if got := tr.Get(grpcthrottle.PushbackKey); len(got) != 1 || got[0] != "-1" {
		t.Errorf("pushback = %q, want -1", got)
	}
	if r, ok := grpcthrottle.Refused(err); !ok || r.RetryDelay != -1 {
		t.Errorf("Refused = %+v, %v", r, ok)
	}
}

// Errors of the server's own configuration are answered with the codes
// Handler's statuses map to, and a nil Gate or pick lets calls
// through.
func TestServerErrors(t *testing.T) {
	clk := clockwork.NewFakeClock()
	lim := limiter(t, clk, 2, throttle.Per(1, time.Second))
	for _, tc := range []struct {
		name string
		pick grpcthrottle.Pick
		cost grpcthrottle.CostFunc
		want codes.Code
	}{
		{"pick fails", func(context.Context, string, any) (throttle.Gate, error) { return nil, errors.New("no") }, nil, codes.Internal},
		{"cost fails", grpcthrottle.Shared(lim), func(context.Context, string, any, throttle.Gate) ([]int64, error) {
			return nil, errors.New("bad request")
		}, codes.InvalidArgument},
		{"two costs for one limit", grpcthrottle.Shared(lim), func(context.Context, string, any, throttle.Gate) ([]int64, error) {
			return []int64{1, 1}, nil
		}, codes.Internal},
		{"nil gate", grpcthrottle.Shared(nil), nil, codes.OK},
		{"nil pick", nil, nil, codes.OK},
		{"free", grpcthrottle.Shared(lim), func(context.Context, string, any, throttle.Gate) ([]int64, error) {
			return []int64{0}, nil
		}, codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := grpcthrottle.NewServer(tc.pick, grpcthrottle.WithCost(tc.cost))
			e := newEnv(t, nil, srv.ServerOptions())
			for range 3 { // more calls than the limit holds
				if _, err := call(context.Background(), e); status.Code(err) != tc.want {
					t.Fatalf("%v, want %v", err, tc.want)
				}
			}
		})
	}
}

// Under WithHandlerPermit the handler finds its Permit in its context and
// settles it; without it the call takes its costs with no Permit; WithSettle
// settles from the reply instead.
func TestServerPermit(t *testing.T) {
	clk := clockwork.NewFakeClock()
	t.Run("handler", func(t *testing.T) {
		lim := limiter(t, clk, 10, throttle.Per(1, time.Hour))
		srv := grpcthrottle.NewServer(grpcthrottle.Shared(lim), grpcthrottle.WithHandlerPermit(), grpcthrottle.WithCost(
			func(context.Context, string, any, throttle.Gate) ([]int64, error) { return []int64{5}, nil }))
		svc := &service{unary: func(ctx context.Context) error {
			p := grpcthrottle.PermitFromContext(ctx)
			if p == nil {
				return errors.New("no permit")
			}
			return p.Settle(2)
		}}
		e := newEnv(t, svc, srv.ServerOptions())
		if _, err := call(context.Background(), e); err != nil {
			t.Fatal(err)
		}
		if got := lim.Bucket("requests").Status().Level; got != 8 {
			t.Errorf("level %v after settling 5 to 2, want 8", got)
		}
	})
	t.Run("no permit asked", func(t *testing.T) {
		lim := limiter(t, clk, 10, throttle.Per(1, time.Hour))
		srv := grpcthrottle.NewServer(grpcthrottle.Shared(lim), grpcthrottle.WithCost(
			func(context.Context, string, any, throttle.Gate) ([]int64, error) { return []int64{5}, nil }))
		svc := &service{unary: func(ctx context.Context) error {
			if p := grpcthrottle.PermitFromContext(ctx); p != nil {
				return errors.New("a permit without WithHandlerPermit")
			}
			return nil
		}}
		e := newEnv(t, svc, srv.ServerOptions())
		if _, err := call(context.Background(), e); err != nil {
			t.Fatal(err)
		}
		if got := lim.Bucket("requests").Status().Level; got != 5 {
			t.Errorf("level %v after a call of 5, want 5", got)
		}
	})
	t.Run("WithSettle", func(t *testing.T) {
		lim := limiter(t, clk, 10, throttle.Per(1, time.Hour))
		srv := grpcthrottle.NewServer(grpcthrottle.Shared(lim),
			grpcthrottle.WithCost(func(context.Context, string, any, throttle.Gate) ([]int64, error) { return []int64{5}, nil }),
			grpcthrottle.WithSettle(func(method string, reply any, taken []int64) []int64 {
				return []int64{int64(len(reply.(*testpb.SimpleResponse).GetPayload().GetBody()))}
			}))
		e := newEnv(t, nil, srv.ServerOptions())
		if _, err := call(context.Background(), e); err != nil { // a 2-byte payload
			t.Fatal(err)
		}
		if got := lim.Bucket("requests").Status().Level; got != 8 {
			t.Errorf("level %v after settling 5 to 2 from the reply, want 8", got)
		}
	})
	if p := grpcthrottle.PermitFromContext(context.Background()); p != nil {
		t.Errorf("PermitFromContext outside a call = %v", p)
	}
}

// A Gate that is no Meter still admits and refuses; the trailer carries
// only the pushback, and the QuotaFailure names every limit the call
// costs something on.
type plainGate struct{ throttle.Gate }

func TestServerGateWithoutMeter(t *testing.T) {
	clk := clockwork.NewFakeClock()
	lim := limiter(t, clk, 1, throttle.Per(1, time.Second))
	srv := grpcthrottle.NewServer(grpcthrottle.Shared(plainGate{lim}))
	e := newEnv(t, nil, srv.ServerOptions())
	var tr metadata.MD
	if _, err := call(context.Background(), e, grpc.Trailer(&tr)); err != nil {
		t.Fatal(err)
	}
	if len(tr.Get(grpcthrottle.RateLimitKey)) != 0 {
		t.Errorf("a Gate without Meter sent status %q", tr.Get(grpcthrottle.RateLimitKey))
	}
	_, err := call(context.Background(), e, grpc.Trailer(&tr))
	ri, qf := details(t, err)
	if ri.GetRetryDelay().AsDuration() != time.Second || len(qf.GetViolations()) != 1 {
		t.Errorf("RetryInfo %v, QuotaFailure %v", ri, qf)
	}
}

// By default only refusals carry the quota's state; WithQuotaTrailer(nil)
// sends none at all, but the pushback still goes.
func TestServerQuotaTrailerDefault(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []grpcthrottle.Option
		refused bool // the refusal carries the status
	}{
		{"default", nil, true},
		{"none", []grpcthrottle.Option{grpcthrottle.WithQuotaTrailer(nil)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := limiter(t, clockwork.NewFakeClock(), 1, throttle.Per(1, time.Second))
			e := newEnv(t, nil, grpcthrottle.NewServer(grpcthrottle.Shared(lim), tc.opts...).ServerOptions())
			var tr metadata.MD
			if _, err := call(context.Background(), e, grpc.Trailer(&tr)); err != nil {
				t.Fatal(err)
			}
			if len(tr.Get(grpcthrottle.RateLimitKey)) != 0 || len(tr.Get(grpcthrottle.PolicyKey)) != 0 {
				t.Errorf("an admitted call carries the status: %v", tr)
			}
			if _, err := call(context.Background(), e, grpc.Trailer(&tr)); status.Code(err) != codes.ResourceExhausted {
				t.Fatal(err)
			}
			if got := len(tr.Get(grpcthrottle.RateLimitKey)) == 1; got != tc.refused {
				t.Errorf("the refusal's trailer %v: status sent %v, want %v", tr, got, tc.refused)
			}
			if got := tr.Get(grpcthrottle.PushbackKey); len(got) != 1 || got[0] != "1000" {
				t.Errorf("pushback %q, want 1000", got)
			}
		})
	}
}
