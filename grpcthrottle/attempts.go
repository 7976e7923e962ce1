package grpcthrottle

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/stats"

	"github.com/throttlekit/throttle"
)

// StatsHandler returns the stats.Handler that lets the Client see the
// attempts grpc-go's retry policy makes below its interceptors, for a
// ClientConn whose service config retries codes.ResourceExhausted (or
// codes.Unavailable): install it with grpc.WithStatsHandler beside
// DialOptions. Each attempt the server refuses then pauses and levels the
// Gate as a refusal the interceptor sees does, at once, so that the other
// calls of the Gate wait with it while grpc-go waits to retry; without it
// the interceptor learns of a refusal only when grpc-go gives up, and the
// Gate keeps releasing calls meanwhile, which the server refuses in turn
// (BenchmarkLoad measures both). It reads only unary calls of methods
// whose retryPolicy lists one of those codes, which carry their Gate in their
// context for it (one allocation a call), and costs the others nothing
// but grpc-go's own price of a stats handler, which is why it is not part
// of DialOptions.
func (cl *Client) StatsHandler() stats.Handler { return attemptHandler{cl.c} }

// attempts is the record of a call whose attempts grpc-go may retry, in
// the context the attempts' contexts derive from.
type attempts struct {
	context.Context
	g      throttle.Gate
	heeded atomic.Bool // a refused attempt was heeded by the stats handler
}

type attemptsKey struct{}

func (a *attempts) Value(key any) any {
	if key == (attemptsKey{}) {
		return a
	}
	return a.Context.Value(key)
}

// policyRetriesQuota reports whether the service config has grpc-go retry
// a refusal of method, or may have: a ClientConn not yet ready may not
// have its service config yet (NewClient resolves on the first call).
func policyRetriesQuota(cc *grpc.ClientConn, method string) bool {
	if cc == nil {
		return false
	}
	if cc.GetState() != connectivity.Ready {
		return true
	}
	rp := cc.GetMethodConfig(method).RetryPolicy
	return rp != nil && rp.MaxAttempts > 1 && (rp.RetryableStatusCodes[codes.ResourceExhausted] || rp.RetryableStatusCodes[codes.Unavailable])
}

type attemptHandler struct{ c *config }

func (attemptHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (h attemptHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	end, ok := s.(*stats.End)
	if !ok || !end.Client || end.Error == nil {
		return
	}
	a, _ := ctx.Value(attemptsKey{}).(*attempts)
	if a == nil {
		return
	}
	if r, refused := Refused(end.Error); refused {
		h.c.heed(a.g, r)
		a.heeded.Store(true)
	}
}

func (attemptHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (attemptHandler) HandleConn(context.Context, stats.ConnStats) {}
