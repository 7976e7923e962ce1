package grpcthrottle_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
)

// retryConfig is a service config whose retryPolicy retries codes up to
// maxAttempts, 10 ms apart.
func retryConfig(maxAttempts int, codes ...string) grpc.DialOption {
	list := `"` + codes[0] + `"`
	for _, c := range codes[1:] {
		list += `,"` + c + `"`
	}
	return grpc.WithDefaultServiceConfig(fmt.Sprintf(`{"methodConfig":[{"name":[{"service":"grpc.testing.TestService"}],
		"retryPolicy":{"maxAttempts":%d,"initialBackoff":"0.01s","maxBackoff":"0.01s","backoffMultiplier":1,
		"retryableStatusCodes":[%s]}}]}`, maxAttempts, list))
}

// The interceptor and grpc-go's retry policy never stack their attempts:
// each round the interceptor sends counts as the policy's maxAttempts when
// the policy retries the refusal's code, and the interceptor re-sends only
// while another round fits in 1+WithRetries. The server tells the two
// apart by grpc-previous-rpc-attempts, which only grpc-go's retries carry.
// (Real time, bounded: the server refuses with a RetryInfo of 1 ms and
// grpc-go's back-off is 10 ms.)
func TestRetryLayers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		retries int
		policy  []grpc.DialOption
		want    []string // grpc-previous-rpc-attempts of each attempt the server sees
	}{
		{"no policy", 2, nil, []string{"", "", ""}},
		{"policy retries RESOURCE_EXHAUSTED, 2 attempts in all", 1, []grpc.DialOption{retryConfig(2, "RESOURCE_EXHAUSTED")}, []string{"", "1"}},
		{"policy retries RESOURCE_EXHAUSTED, two rounds of two", 3, []grpc.DialOption{retryConfig(2, "RESOURCE_EXHAUSTED")}, []string{"", "1", "", "1"}},
		{"policy's own attempts exceed the budget", 1, []grpc.DialOption{retryConfig(3, "RESOURCE_EXHAUSTED")}, []string{"", "1", "2"}},
		{"policy retries UNAVAILABLE only", 1, []grpc.DialOption{retryConfig(2, "UNAVAILABLE")}, []string{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := limiter(t, clockwork.NewRealClock(), 100, throttle.Per(100, time.Millisecond))
			cl := grpcthrottle.NewClient(grpcthrottle.Shared(lim), grpcthrottle.WithRetries(tc.retries))
			refuse := func(int) error { return refusal(t, codes.ResourceExhausted, time.Millisecond, "") }
			e := newEnv(t, &service{refuse: refuse}, nil, append(tc.policy, cl.DialOptions()...)...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := call(ctx, e); status.Code(err) != codes.ResourceExhausted {
				t.Fatalf("%v, want the server's refusal", err)
			}
			if _, prev := e.svc.attempts(); !slices.Equal(prev, tc.want) {
				t.Errorf("attempts with grpc-previous-rpc-attempts %q, want %q", prev, tc.want)
			}
		})
	}
}

// A Server's pushback makes grpc-go's own retry policy wait the exact
// wait, so that a client without the interceptor is admitted on its second
// attempt; and a pushback of -1 stops it from retrying the impossible.
// (The server's Gate is on a fake clock, moved by the wait when it
// refuses, so that the retry finds its token whatever the real time.)
func TestServerPushbackDrivesGRPCRetries(t *testing.T) {
	clk := clockwork.NewFakeClock()
	lim := limiter(t, clk, 1, throttle.Per(1, 50*time.Millisecond))
	srv := grpcthrottle.NewServer(grpcthrottle.Shared(lim))
	var seen atomic.Int32
	var pushbacks []string
	var mu sync.Mutex
	advance := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		seen.Add(1)
		resp, err := handler(ctx, req)
		if status.Code(err) == codes.ResourceExhausted {
			r, _ := grpcthrottle.Refused(err)
			mu.Lock()
			pushbacks = append(pushbacks, r.RetryDelay.String())
			mu.Unlock()
			clk.Advance(r.RetryDelay)
		}
		return resp, err
	}
	svc := &service{}
	e := newEnv(t, svc, []grpc.ServerOption{grpc.ChainUnaryInterceptor(advance, srv.UnaryServerInterceptor())}, retryConfig(5, "RESOURCE_EXHAUSTED"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 2 {
		if _, err := call(ctx, e); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	// Three attempts: the first call, the second refused with a pushback
	// of 50 ms, and grpc-go's retry after it, admitted. Its 10 ms
	// back-off alone would have retried before the token.
	if n, prev := svc.attempts(); n != 2 || prev[1] != "1" || seen.Load() != 3 {
		t.Errorf("%d attempts, the handler saw %d (previous attempts %q); want 3, 2, the second grpc-go's first retry", seen.Load(), n, prev)
	}
	mu.Lock()
	if len(pushbacks) != 1 || pushbacks[0] != "50ms" {
		t.Errorf("refusals with RetryInfo %q, want one of 50ms", pushbacks)
	}
	mu.Unlock()

	never := grpcthrottle.NewServer(grpcthrottle.Shared(lim), grpcthrottle.WithCost(
		func(context.Context, string, any, throttle.Gate) ([]int64, error) { return []int64{2}, nil }))
	var attempts atomic.Int32
	count := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		attempts.Add(1)
		return handler(ctx, req)
	}
	e = newEnv(t, nil, []grpc.ServerOption{grpc.ChainUnaryInterceptor(count, never.UnaryServerInterceptor())}, retryConfig(5, "RESOURCE_EXHAUSTED"))
	if _, err := call(ctx, e); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("%v, want ResourceExhausted", err)
	}
	if n := attempts.Load(); n != 1 {
		t.Errorf("%d attempts of a call that can never be admitted, want 1", n)
	}
}

// With StatsHandler installed, an attempt the server refuses and grpc-go
// retries pauses the Gate at once, though the call itself succeeds on
// grpc-go's retry; without it, the interceptor never learns of it. The
// first call of a ClientConn (whose service config is not known until it
// connects) and a later one alike.
func TestStatsHandlerSeesGRPCRetries(t *testing.T) {
	for _, tc := range []struct{ installed, warm bool }{{true, false}, {true, true}, {false, false}} {
		installed := tc.installed
		t.Run(fmt.Sprintf("installed=%v,warm=%v", tc.installed, tc.warm), func(t *testing.T) {
			clk := clockwork.NewFakeClock()
			var pauses atomic.Int32
			obs := observerFunc(func(e throttle.Event) {
				if e.Kind == throttle.EventPaused {
					pauses.Add(1)
				}
			})
			lim := limiter(t, clk, 10, throttle.Per(10, time.Second), throttle.WithObserver(obs))
			cl := grpcthrottle.NewClient(grpcthrottle.Shared(lim), grpcthrottle.WithClock(clk))
			opts := append([]grpc.DialOption{retryConfig(2, "RESOURCE_EXHAUSTED")}, cl.DialOptions()...)
			if installed {
				opts = append(opts, grpc.WithStatsHandler(cl.StatsHandler()))
			}
			svc := &service{refuse: func(n int) error {
				if n == 1 {
					return refusal(t, codes.ResourceExhausted, 3*time.Second, "")
				}
				return nil
			}}
			e := newEnv(t, svc, nil, opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if tc.warm {
				if _, err := e.client.EmptyCall(ctx, &testpb.Empty{}); status.Code(err) != codes.Unimplemented {
					t.Fatal(err)
				}
			}
			if _, err := call(ctx, e); err != nil {
				t.Fatal(err)
			}
			if _, prev := svc.attempts(); !slices.Equal(prev, []string{"", "1"}) {
				t.Fatalf("attempts %q, want grpc-go's retry", prev)
			}
			wantPause, wantEvents := time.Duration(0), int32(0)
			if installed {
				wantPause, wantEvents = 3*time.Second, 1
			}
			if got, _ := lim.WaitTime(1); got != wantPause {
				t.Errorf("the Gate is paused for %v, want %v", got, wantPause)
			}
			if got := pauses.Load(); got != wantEvents {
				t.Errorf("%d EventPaused, want %d", got, wantEvents)
			}
		})
	}
}
