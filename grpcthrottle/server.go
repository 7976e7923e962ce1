package grpcthrottle

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/throttlekit/throttle"
)

// Server holds the interceptors that enforce a quota in front of a gRPC
// server's handlers, as httpthrottle.Handler does for HTTP.
//
// For each call they take the call's costs (WithCost; 1 on every limit by
// default; req is nil for a stream) from the Gate that pick chooses,
// without waiting (TryAcquirePermit, or a throttle.Taker's TryAcquire when
// no Permit is wanted): a call the Gate covers now goes to the handler,
// under WithHandlerPermit with the Permit in its context for the handler
// to settle (PermitFromContext; WithSettle settles a unary call from its
// reply instead, and implies WithHandlerPermit for it); any other is
// refused with codes.ResourceExhausted carrying a google.rpc.RetryInfo
// whose retry_delay is exactly the wait for its costs
// (WaitTime), and a google.rpc.QuotaFailure naming (in quota_id) each limit
// that is short, with the PushbackKey trailer set to that wait in
// milliseconds, rounded up, so that grpc-go's retry policy on the client
// waits it too. A cost no wait can cover (above a limit's capacity, a
// closed limit) is refused the same way without a RetryInfo and with a
// pushback of -1: do not retry. An error of pick is answered
// codes.Internal, one of the cost function codes.InvalidArgument, and a
// wrong number of costs codes.Internal. A nil Gate, or a nil pick, lets
// the call through.
//
// Every refusal carries the Gate's state in its trailing metadata, if the
// Gate is a throttle.Meter: the IETF RateLimit fields by default
// (WriteIETF, WithQuotaTrailer); with WithQuotaOnAdmit every admitted call
// does too.
//
// WithMessageCost meters a stream's messages: each one the handler sends
// waits its turn before it goes, and each one received waits before it is
// returned to the handler.
type Server struct {
	c *config
}

// NewServer returns the interceptors of a server whose calls go through
// the Gates pick chooses. A nil pick limits nothing.
func NewServer(pick Pick, opts ...Option) *Server {
	return &Server{c: newConfig(serverSide, pick, opts)}
}

// UnaryServerInterceptor returns the interceptor of unary calls, for
// grpc.ChainUnaryInterceptor.
func (s *Server) UnaryServerInterceptor() grpc.UnaryServerInterceptor { return s.unary }

// StreamServerInterceptor returns the interceptor of streams, for
// grpc.ChainStreamInterceptor.
func (s *Server) StreamServerInterceptor() grpc.StreamServerInterceptor { return s.stream }

// ServerOptions returns both interceptors as options of grpc.NewServer.
func (s *Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(s.unary),
		grpc.ChainStreamInterceptor(s.stream),
	}
}

// PermitFromContext returns the Permit a Server took for the call whose
// handler has ctx, so that the handler can settle it against the call's
// actual cost (or cancel it), or nil outside the interceptors, for a call
// that took nothing, and without WithHandlerPermit (or WithSettle, for a
// unary call).
func PermitFromContext(ctx context.Context) throttle.Permit {
	p, _ := ctx.Value(permitKey{}).(throttle.Permit)
	return p
}

type permitKey struct{}

func (s *Server) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	want := s.c.permits || s.c.settle != nil
	_, p, err := s.admit(ctx, info.FullMethod, req, nil, want)
	if err != nil {
		return nil, err
	}
	if p == nil || !want {
		return handler(ctx, req)
	}
	resp, err := handler(context.WithValue(ctx, permitKey{}, p), req)
	if err == nil {
		s.c.settleReply(info.FullMethod, resp, p)
	}
	return resp, err
}

func (s *Server) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	g, p, err := s.admit(ss.Context(), info.FullMethod, nil, ss, s.c.permits)
	if err != nil {
		return err
	}
	if !s.c.permits {
		p = nil
	}
	if g == nil || (p == nil && s.c.msgCost == nil) {
		return handler(srv, ss)
	}
	ctx := ss.Context()
	if p != nil {
		ctx = context.WithValue(ctx, permitKey{}, p)
	}
	return handler(srv, &serverStream{ServerStream: ss, ctx: ctx, m: meter{c: s.c, g: g, method: info.FullMethod}})
}

// admit decides a call of method on the Gate pick chooses: the Gate and
// the Permit taken, a nil Permit for a call let through free or, unless
// permit asks for one, taken without one from a throttle.Taker, or the
// status error to answer. The quota trailer goes to ss, or for a unary
// call (ss nil) to grpc.SetTrailer.
func (s *Server) admit(ctx context.Context, method string, req any, ss grpc.ServerStream, permit bool) (throttle.Gate, throttle.Permit, error) {
	c := s.c
	g, err := c.pick(ctx, method, req)
	if err != nil {
		return nil, nil, status.Errorf(codes.Internal, "grpcthrottle: %s: choosing the gate: %v", method, err)
	}
	if g == nil {
		return nil, nil, nil
	}
	costs, err := c.costs(ctx, method, req, g)
	if err != nil {
		return nil, nil, status.Errorf(codes.InvalidArgument, "grpcthrottle: %s: the call's cost: %v", method, err)
	}
	if free(costs) {
		return g, nil, nil
	}
	var p throttle.Permit
	var ok bool
	if tk := c.taker(g, permit); tk != nil {
		ok, err = tk.TryAcquire(costs...)
	} else {
		p, ok, err = g.TryAcquirePermit(costs...)
	}
	wait := time.Duration(0)
	switch {
	case err == nil && ok:
	case err == nil:
		if wait, err = g.WaitTime(costs...); err != nil {
			wait = -1
		}
	case errors.Is(err, throttle.ErrCostExceedsCapacity):
		wait = -1
	default:
		return nil, nil, status.Errorf(codes.Internal, "grpcthrottle: %s: %v", method, err)
	}
	var st []throttle.LimitStatus
	if m, isMeter := g.(throttle.Meter); isMeter && (!ok || (c.onAdmit && c.trailer != nil)) {
		st = m.Status(nil)
	}
	var md metadata.MD
	if c.trailer != nil && st != nil {
		md = make(metadata.MD, 3)
		c.trailer(md, st)
	}
	if !ok {
		if md == nil {
			md = make(metadata.MD, 1)
		}
		md.Set(PushbackKey, pushback(wait))
	}
	if md != nil {
		if ss != nil {
			ss.SetTrailer(md)
		} else {
			_ = grpc.SetTrailer(ctx, md) // fails only outside a server's call
		}
	}
	if !ok {
		return g, nil, refusal(method, g, costs, wait, st).Err()
	}
	return g, p, nil
}
