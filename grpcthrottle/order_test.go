package grpcthrottle_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
)

// vendor is a server interceptor that records the calls it sees, by
// payload, and lets a test hold and refuse the first attempt of one.
type vendor struct {
	mu       sync.Mutex
	arrivals []string
	arrived  chan string
	hold     string        // the payload whose first attempt waits for release, then is refused
	release  chan struct{} // closed to refuse hold
	delay    time.Duration // its RetryInfo
	t        *testing.T
}

func (v *vendor) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	body := string(req.(*testpb.SimpleRequest).GetPayload().GetBody())
	v.mu.Lock()
	first := !slices.Contains(v.arrivals, body)
	v.arrivals = append(v.arrivals, body)
	v.mu.Unlock()
	v.arrived <- body
	if body == v.hold && first {
		<-v.release
		return nil, refusal(v.t, codes.ResourceExhausted, v.delay, "")
	}
	return handler(ctx, req)
}

// refundSpy is a Limiter that reports what remains right after each
// Settle: a waiter the give-back served has taken it by then.
type refundSpy struct {
	*throttle.Limiter
	remaining chan int64
}

func (s refundSpy) Settle(taken, actual []int64) error {
	err := s.Limiter.Settle(taken, actual)
	s.remaining <- s.Status(nil)[0].Remaining
	return err
}

func (v *vendor) seen() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.arrivals)
}

// A refusal pauses the Gate before the refused call's permit is given
// back, so that the waiter the give-back serves waits out the pause
// instead of being sent into it; and the refused call is re-sent ahead of
// the call that queued after it. A and B take both tokens of a Gate of 2 at
// 1 a minute, C waits; the server refuses A with a RetryInfo of 50 ms:
// nothing is sent until the pause ends, then A, and C only with the next
// token.
func TestRefusalPausesBeforeGivingBack(t *testing.T) {
	clk := clockwork.NewFakeClock()
	lim := limiter(t, clk, 2, throttle.Per(1, time.Minute))
	spy := refundSpy{lim, make(chan int64, 1)}
	cl := grpcthrottle.NewClient(grpcthrottle.Shared(spy), grpcthrottle.WithClock(clk))
	v := &vendor{arrived: make(chan string, 8), hold: "A", release: make(chan struct{}), delay: 50 * time.Millisecond, t: t}
	e := newEnv(t, nil, []grpc.ServerOption{grpc.ChainUnaryInterceptor(v.intercept)}, cl.DialOptions()...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, 3)
	send := func(body string) {
		go func() {
			_, err := e.client.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte(body)}})
			errs <- err
		}()
	}
	next := func() string {
		select {
		case b := <-v.arrived:
			return b
		case <-ctx.Done():
			t.Fatal("no call arrived")
			return ""
		}
	}
	send("A")
	if b := next(); b != "A" {
		t.Fatalf("first arrival %q", b)
	}
	send("B")
	if b := next(); b != "B" {
		t.Fatalf("second arrival %q", b)
	}
	send("C")
	waitForWaiters(t, clk, 1)
	close(v.release)
	if n := <-spy.remaining; n != 1 {
		t.Fatalf("%d tokens left once A's is given back, want 1: C took it before the pause", n)
	}
	waitForWaiters(t, clk, 2) // C, and A's re-send
	if got := v.seen(); !slices.Equal(got, []string{"A", "B"}) {
		t.Fatalf("sent before the pause ended: %q", got)
	}
	if st := lim.Status(nil)[0]; st.Paused != clk.Now().Add(50*time.Millisecond) {
		t.Errorf("paused until %v, want 50ms from now", st.Paused.Sub(clk.Now()))
	}
	clk.Advance(50*time.Millisecond - time.Nanosecond)
	select {
	case b := <-v.arrived:
		t.Fatalf("%q sent before the pause ended", b)
	default:
	}
	clk.Advance(time.Nanosecond)
	if b := next(); b != "A" {
		t.Fatalf("%q sent first after the pause, want A's re-send ahead of C", b)
	}
	waitForWaiters(t, clk, 1)
	clk.Advance(time.Minute)
	if b := next(); b != "C" {
		t.Fatalf("arrival %q, want C", b)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
