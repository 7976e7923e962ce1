package redisbucket

import (
	"context"
	"sync/atomic"
	"time"
)

// sharedDeadline is a call timeout that the calls started within one
// window share: a context.WithTimeout per call is a timer to start and
// stop, a large part of what the library costs a decision on top of
// go-redis (benchmarks/README.md, BenchmarkRedisClientOverhead).
type sharedDeadline struct {
	ctx   context.Context
	until time.Time // calls started before this take ctx
	// cancel is never called before the deadline, when ctx's own timer
	// ends it: the last call that took ctx has its full timeout.
	cancel context.CancelFunc
}

// deadlineWindow is how long calls may share a deadline: it lengthens a
// call's timeout by less than that, never shortens it.
func deadlineWindow(callTimeout time.Duration) time.Duration {
	return min(time.Millisecond, callTimeout/16)
}

// callCtx returns the context for a script call made with ctx, ending with
// ctx or at the call timeout. A call made without a context of its own
// (context.Background: the methods without a Context suffix, the lease's
// returns) takes the deadline shared by the calls started in the same
// window (deadlineWindow), which ends between the call timeout and the
// call timeout plus the window after the call started. A caller's context
// keeps a timer of its own: it carries the caller's cancellation and its
// values (tracing hooks read them).
func (e *engine) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx != context.Background() {
		return context.WithTimeout(ctx, e.o.callTimeout)
	}
	now := time.Now()
	if d := e.dl.Load(); d != nil && now.Before(d.until) {
		return d.ctx, func() {}
	}
	w := deadlineWindow(e.o.callTimeout)
	dctx, cancel := context.WithDeadline(context.Background(), now.Add(e.o.callTimeout+w))
	e.dl.Store(&sharedDeadline{ctx: dctx, until: now.Add(w), cancel: cancel})
	return dctx, func() {}
}

// deadlines is the engine's shared call deadline (callCtx).
type deadlines = atomic.Pointer[sharedDeadline]
