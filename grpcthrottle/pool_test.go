package grpcthrottle_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
	"github.com/throttlekit/throttle/pool"
)

// TestPoolMemberRoutedAndPaused: over a pool of two API keys, a call goes
// with the credential of the member that served it (WithRoutes); the
// server's refusal of key a pauses member a alone, and the call, sent
// again, moves to key b at once rather than waiting out a's pause. (Real
// time, bounded: a 1-minute RetryInfo nobody waits for.)
func TestPoolMemberRoutedAndPaused(t *testing.T) {
	clk := clockwork.NewRealClock()
	a := limiter(t, clk, 10, throttle.Per(10, time.Second))
	b := limiter(t, clk, 10, throttle.Per(10, time.Second))
	p, err := pool.New([]pool.Member{{Name: "a", Gate: a}, {Name: "b", Gate: b, Tier: 1}})
	if err != nil {
		t.Fatal(err)
	}
	route := func(key string) func(context.Context) context.Context {
		return func(ctx context.Context) context.Context {
			return metadata.AppendToOutgoingContext(ctx, "x-api-key", key)
		}
	}
	cl := grpcthrottle.NewClient(grpcthrottle.Shared(p), grpcthrottle.WithMaxPause(2*time.Minute),
		grpcthrottle.WithRoutes(map[string]func(context.Context) context.Context{"a": route("a"), "b": route("b")}))
	var mu sync.Mutex
	var keys []string
	svc := &service{unary: func(ctx context.Context) error {
		key := metadata.ValueFromIncomingContext(ctx, "x-api-key")
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, key...)
		if len(key) == 1 && key[0] == "a" {
			return refusal(t, codes.ResourceExhausted, time.Minute, "")
		}
		return nil
	}}
	e := newEnv(t, svc, nil, cl.DialOptions()...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := e.client.UnaryCall(ctx, &testpb.SimpleRequest{}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %v: it waited out a's pause", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 || keys[0] != "a" || keys[1] != "b" {
		t.Fatalf("the server saw keys %q; want a (refused), then b", keys)
	}
	if st := a.Status(nil)[0]; st.Paused.IsZero() {
		t.Errorf("member a not paused after its refusal: %+v", st)
	}
	if st := b.Status(nil)[0]; !st.Paused.IsZero() || st.Remaining != 9 {
		t.Errorf("member b: %+v; want unpaused, one call spent", st)
	}
	if st := p.Status(nil)[0]; !st.Paused.IsZero() || st.Remaining != 9 {
		t.Errorf("the pool: %+v; want 9 left, all b's: a is paused, b serves", st)
	}
}
