package grpcthrottle_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
)

// refusal is the status a Google API refuses with: ResourceExhausted,
// a RetryInfo of delay and a QuotaFailure naming quota.
func refusal(t *testing.T, code codes.Code, delay time.Duration, quota string) error {
	t.Helper()
	s := status.New(code, "quota exceeded")
	var ds []any
	if quota != "" {
		ds = append(ds, &errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{QuotaId: quota}}})
	}
	if delay >= 0 {
		ds = append(ds, &errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	}
	for _, d := range ds {
		var err error
		switch d := d.(type) {
		case *errdetails.QuotaFailure:
			s, err = s.WithDetails(d)
		case *errdetails.RetryInfo:
			s, err = s.WithDetails(d)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return s.Err()
}

// Calls wait their turn on the client's Gate before they are sent, FIFO,
// and a call whose deadline comes first fails unsent with a GateError.
func TestClientWaitsItsTurn(t *testing.T) {
	clk := clockwork.NewFakeClock()
	lim := limiter(t, clk, 1, throttle.Per(1, time.Second))
	cl := grpcthrottle.NewClient(grpcthrottle.Shared(lim), grpcthrottle.WithClock(clk))
	e := newEnv(t, nil, nil, cl.DialOptions()...)
	ctx := context.Background()
	if _, err := call(ctx, e); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := call(ctx, e)
		done <- err
	}()
	waitForWaiters(t, clk, 1)
	if n, _ := e.svc.attempts(); n != 1 {
		t.Fatalf("the server saw %d calls before the second's turn, want 1", n)
	}
	clk.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// The bucket is empty: a deadline before the next token fails at once.
	dctx, cancel := context.WithDeadline(ctx, clk.Now().Add(time.Second/2))
	defer cancel()
	_, err := call(dctx, e)
	var we *throttle.WaitError
	var ge *grpcthrottle.GateError
	if status.Code(err) != codes.DeadlineExceeded || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &we) || !errors.As(err, &ge) {
		t.Fatalf("%v (%T): want a GateError of a WaitError, DeadlineExceeded", err, err)
	}
	if n, _ := e.svc.attempts(); n != 2 {
		t.Errorf("the server saw %d calls, want 2", n)
	}
}

// A refusal with a RetryInfo pauses the whole Gate until its delay, gives
// the refused call's permit back, and re-sends the call behind the pause;
// the calls queued behind it wait too.
func TestClientHeedsRetryInfo(t *testing.T) {
	clk := clockwork.NewFakeClock()
	var paused []time.Time
	var mu sync.Mutex
	obs := observerFunc(func(e throttle.Event) {
		if e.Kind == throttle.EventPaused {
			mu.Lock()
			paused = append(paused, e.Until)
			mu.Unlock()
		}
	})
	lim := limiter(t, clk, 10, throttle.Per(10, time.Second), throttle.WithObserver(obs))
	cl := grpcthrottle.NewClient(grpcthrottle.Shared(lim), grpcthrottle.WithClock(clk))
	svc := &service{refuse: func(n int) error {
		if n == 1 {
			return refusal(t, codes.ResourceExhausted, 3*time.Second, "")
		}
		return nil
	}}
	e := newEnv(t, svc, nil, cl.DialOptions()...)
	start := clk.Now()
	done := make(chan error, 1)
	go func() {
		_, err := call(context.Background(), e)
		done <- err
	}()
	// The refused call is queued behind the pause.
	waitForWaiters(t, clk, 1)
	// The refused permit is given back, and the level brought down to its
	// cost: one call goes when the pause ends, not a burst.
	if got := lim.Bucket("requests").Status().Level; got != 1 {
		t.Errorf("level %v after the refusal, want 1, the refused call's cost", got)
	}
	mu.Lock()
	if len(paused) != 1 || !paused[0].Equal(start.Add(3*time.Second)) {
		t.Errorf("EventPaused until %v, want one at +3s", paused)
	}
	mu.Unlock()
	// A second call finds the Gate paused too.
	if ok, _ := lim.TryAcquire(1); ok {
		t.Error("TryAcquire passed during the server's pause")
	}
	clk.Advance(3*time.Second - 1)
	select {
	case err := <-done:
		t.Fatalf("the call returned before the pause ended: %v", err)
	default:
	}
	clk.Advance(1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, prev := e.svc.attempts(); n != 2 || prev[1] != "" {
		t.Errorf("the server saw %d attempts (previous %q), want 2 sent by the interceptor", n, prev)
	}
}

// A delay beyond the MaxPause pauses the Gate for the MaxPause only and is
// not re-sent; nor is a call whose deadline the delay would pass, nor a
// refusal without a RetryInfo, nor an Unavailable without one.
func TestClientDoesNotResend(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       func(t *testing.T) error
		deadline  time.Duration
		wantPause time.Duration
	}{
		{"delay over MaxPause", func(t *testing.T) error { return refusal(t, codes.ResourceExhausted, time.Hour, "") }, 0, time.Minute},
		{"delay past the deadline", func(t *testing.T) error { return refusal(t, codes.ResourceExhausted, 10*time.Second, "") }, 5 * time.Second, 10 * time.Second},
		{"no RetryInfo", func(t *testing.T) error { return refusal(t, codes.ResourceExhausted, -1, "") }, 0, 0},
		{"Unavailable without RetryInfo", func(t *testing.T) error { return status.Error(codes.Unavailable, "down") }, 0, 0},
		{"another code", func(t *testing.T) error { return refusal(t, codes.PermissionDenied, time.Second, "") }, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clockwork.NewFakeClock()
			lim := limiter(t, clk, 10, throttle.Per(10, time.Second))
			cl := grpcthrottle.NewClient(grpcthrottle.Shared(lim), grpcthrottle.WithClock(clk), grpcthrottle.WithMaxPause(time.Minute))
			want := tc.err(t)
			e := newEnv(t, &service{refuse: func(int) error { return want }}, nil, cl.DialOptions()...)
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, clk.Now().Add(tc.deadline))
				defer cancel()
			}
			_, err := call(ctx, e)
			if status.Code(err) != status.Code(want) || status.Convert(err).Message() != status.Convert(want).Message() {
				t.Fatalf("%v, want the server's %v", err, want)
			}
			if n, _ := e.svc.attempts(); n != 1 {
				t.Errorf("%d attempts, want 1", n)
			}
			if got, _ := lim.WaitTime(1); got != tc.wantPause {
				t.Errorf("the Gate is paused for %v, want %v", got, tc.wantPause)
			}
		})
	}
}

// A QuotaFailure naming a limit empties it: the server says it is spent.
func TestClientHeedsQuotaFailure(t *testing.T) {
	clk := clockwork.NewFakeClock()
	rpm, _ := throttle.New(10, throttle.Per(10, time.Second), throttle.WithClock(clk), throttle.WithName("requests"))
	tpm, _ := throttle.New(1000, throttle.Per(1000, time.Second), throttle.WithClock(clk), throttle.WithName("tokens"))
	lim, err := throttle.NewLimiter(rpm, tpm)
	if err != nil {
		t.Fatal(err)
	}
	cl := grpcthrottle.NewClient(grpcthrottle.Shared(lim), grpcthrottle.WithClock(clk), grpcthrottle.WithCost(
		func(context.Context, string, any, throttle.Gate) ([]int64, error) { return []int64{1, 100}, nil }))
	e := newEnv(t, &service{refuse: func(int) error { return refusal(t, codes.ResourceExhausted, -1, "tokens") }}, nil, cl.DialOptions()...)
	if _, err := call(context.Background(), e); status.Code(err) != codes.ResourceExhausted {
		t.Fatal(err)
	}
	if rpm.Status().Level != 10 || tpm.Status().Level != 0 {
		t.Errorf("levels requests %v, tokens %v; want 10 (given back) and 0 (the server's word)", rpm.Status().Level, tpm.Status().Level)
	}
}

// WithSettle settles the permit from the reply: the estimate goes back to
// what the reply reports.
func TestClientSettlesFromReply(t *testing.T) {
	clk := clockwork.NewFakeClock()
	lim := limiter(t, clk, 100, throttle.Per(1, time.Hour))
	cl := grpcthrottle.NewClient(grpcthrottle.Shared(lim), grpcthrottle.WithClock(clk),
		grpcthrottle.WithCost(func(context.Context, string, any, throttle.Gate) ([]int64, error) { return []int64{50}, nil }),
		grpcthrottle.WithSettle(func(method string, reply any, taken []int64) []int64 {
			if taken[0] != 50 {
				t.Errorf("taken %v", taken)
			}
			return []int64{int64(len(reply.(*testpb.SimpleResponse).GetPayload().GetBody()))}
		}))
	e := newEnv(t, nil, nil, cl.DialOptions()...)
	if _, err := call(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if got := lim.Bucket("requests").Status().Level; got != 98 {
		t.Errorf("level %v, want 98: 50 taken, settled to the reply's 2", got)
	}
}

// Keyed by metadata: each tenant has its own limit; joined with the
// method, each tenant's methods have their own.
func TestPickPerKey(t *testing.T) {
	clk := clockwork.NewFakeClock()
	keyed := throttle.NewKeyed(func(string) []throttle.Limit {
		return []throttle.Limit{{Name: "requests", Capacity: 1, Rate: throttle.Per(1, time.Hour)}}
	}, throttle.WithClock(clk))
	srv := grpcthrottle.NewServer(grpcthrottle.PerKey(keyed, grpcthrottle.JoinKeys(grpcthrottle.MethodKey, grpcthrottle.MetadataKey("X-Tenant"))))
	e := newEnv(t, nil, srv.ServerOptions())
	tenant := func(name string) context.Context {
		return metadataOut(context.Background(), "x-tenant", name)
	}
	if _, err := call(tenant("acme"), e); err != nil {
		t.Fatal(err)
	}
	if _, err := call(tenant("acme"), e); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("acme's second call: %v", err)
	}
	if _, err := call(tenant("globex"), e); err != nil {
		t.Fatalf("globex's first call: %v", err)
	}
	if _, err := e.client.EmptyCall(tenant("acme"), &testpb.Empty{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("acme's first EmptyCall: %v, want it admitted (and unimplemented)", err)
	}

	// The client reads the outgoing metadata with the same KeyFunc.
	key := grpcthrottle.MetadataKey("x-tenant")
	if got := key(tenant("initech"), "/m"); got != "initech" {
		t.Errorf("MetadataKey on outgoing metadata = %q", got)
	}
	if got := key(context.Background(), "/m"); got != "" {
		t.Errorf("MetadataKey without metadata = %q", got)
	}
}

type observerFunc func(throttle.Event)

func (f observerFunc) Observe(e throttle.Event) { f(e) }

// A re-send whose permit cannot be had before the deadline (the server's
// QuotaFailure emptied the limit, whose next token is a minute away)
// returns the server's refusal, not the Gate's error.
func TestClientReturnsTheRefusalWhenTheResendCannotWait(t *testing.T) {
	clk := clockwork.NewFakeClock()
	lim := limiter(t, clk, 1, throttle.Per(1, time.Minute))
	cl := grpcthrottle.NewClient(grpcthrottle.Shared(lim), grpcthrottle.WithClock(clk))
	want := refusal(t, codes.ResourceExhausted, 2*time.Second, "requests")
	e := newEnv(t, &service{refuse: func(int) error { return want }}, nil, cl.DialOptions()...)
	ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(30*time.Second))
	defer cancel()
	_, err := call(ctx, e)
	var ge *grpcthrottle.GateError
	if status.Code(err) != codes.ResourceExhausted || errors.As(err, &ge) {
		t.Fatalf("%v (%T), want the server's refusal", err, err)
	}
	if n, _ := e.svc.attempts(); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}
