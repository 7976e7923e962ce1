package redisbucket_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// TestRefusalPausesBeforeGiveBack: A and B take both tokens of a gate at
// one a minute and C waits in Acquire; A's call is refused with a pause,
// and A does what the gRPC interceptor and the HTTP Transport do, in their
// order: PauseUntil, then the give-back of its cost (its Permit's Cancel,
// or Settle for costs taken by Take). The give-back wakes C, which must
// not be granted before the pause ends: sent then, it would meet the
// refusal again (issue 43, item 1). Given back before the pause, the token
// goes to C at once.
func TestRefusalPausesBeforeGiveBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		take func(context.Context, *redisbucket.Limiter) (giveBack func(), err error)
	}{
		{"Permit.Cancel", func(ctx context.Context, l *redisbucket.Limiter) (func(), error) {
			p, err := l.Acquire(ctx, 1)
			if err != nil {
				return nil, err
			}
			return func() { _ = p.Cancel() }, nil
		}},
		{"Limiter.Settle", func(ctx context.Context, l *redisbucket.Limiter) (func(), error) {
			_, err := l.Take(ctx, 1)
			return func() { _ = l.Settle([]int64{1}, []int64{0}) }, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			client := r.be.Client()
			calls := &callHook{done: make(chan struct{}, 16)}
			client.AddHook(calls)
			l, err := redisbucket.NewLimiter(client, "refusal-order-"+tc.name, []redisbucket.Limit{
				{Name: "calls", Capacity: 2, Rate: throttle.Per(1, time.Minute)},
			}, r.opts(redisbucket.WithoutReservations())...) // a give-back wakes a waiter to decide again
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			giveBack, err := tc.take(ctx, l)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tc.take(ctx, l); err != nil {
				t.Fatal(err)
			}
			granted := make(chan time.Time, 1)
			go func() {
				p, err := l.Acquire(context.WithValue(ctx, waiterKey{}, true), 1)
				if err != nil {
					t.Error(err)
				} else {
					_ = p.Cancel()
				}
				granted <- r.fc.Now()
			}()
			if err := r.fc.BlockUntilContext(ctx, 1); err != nil {
				t.Fatal(err)
			}
			// The give-back wakes C, which decides again: that decision (a
			// call on C's context) is awaited, so that C's turn comes
			// before anything A does next.
			giveBackA := func() {
				calls.drain()
				giveBack()
				<-calls.done
			}
			const pause = 50 * time.Millisecond
			end := r.fc.Now().Add(pause)
			l.PauseUntil(end)
			giveBackA()
			at := driveUntil(t, r, granted, end)
			if at.Before(end) {
				t.Fatalf("C was granted %v after the refusal, before its pause of %v ended", pause-end.Sub(at), pause)
			}
		})
	}
}

// driveUntil advances the rig's time whenever every goroutine of the test
// sleeps on the clock, until done yields, and returns what it yielded: by
// a millisecond up to end, so that a waiter granted early is seen early,
// and then a second at a time. It moves the client's clock before the
// server's, so that a grant's time read on the client's clock is never
// earlier than the server's instant of that grant.
func driveUntil(t *testing.T, r *rig, done <-chan time.Time, end time.Time) time.Time {
	t.Helper()
	for range 1000 {
		ctx, cancel := context.WithCancel(context.Background())
		blocked := make(chan error, 1)
		go func() { blocked <- r.fc.BlockUntilContext(ctx, 1) }()
		select {
		case at := <-done:
			cancel()
			<-blocked
			return at
		case err := <-blocked:
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		step := time.Second
		if r.fc.Now().Before(end) {
			step = time.Millisecond
		}
		r.fc.Advance(step)
		if r.be.Mini != nil {
			r.be.Mini.SetTime(r.fc.Now())
		}
	}
	t.Fatal("C was never granted")
	return time.Time{}
}

// callHook signals each command or pipeline a client completes for a
// context that carries waiterKey.
type callHook struct{ done chan struct{} }

type waiterKey struct{}

func (h *callHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (h *callHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.signal(ctx)
		return err
	}
}

func (h *callHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.signal(ctx)
		return err
	}
}

// signal never blocks a call: a test reads the signals it waits for
// after a drain, and the buffer holds them.
func (h *callHook) signal(ctx context.Context) {
	if ctx.Value(waiterKey{}) == nil {
		return
	}
	select {
	case h.done <- struct{}{}:
	default:
	}
}

// drain forgets the completions signalled so far.
func (h *callHook) drain() {
	for {
		select {
		case <-h.done:
		default:
			return
		}
	}
}
