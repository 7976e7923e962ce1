package grpcthrottle_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
	"github.com/throttlekit/throttle/htb"
	"github.com/throttlekit/throttle/trtcm"
)

// The interceptors take any Gate, not only a Limiter: a server over a
// Marker (green admitted, refused with a RetryInfo until green) and over
// an htb.Limiter (a team's class of an org's quota, a Meter too), and a
// client over a Keyed's Limiter.
func TestOtherGates(t *testing.T) {
	clk := clockwork.NewFakeClock()
	t.Run("Marker", func(t *testing.T) {
		m, err := trtcm.New(throttle.Per(1, time.Second), 1, throttle.Per(2, time.Second), 2, throttle.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, nil, grpcthrottle.NewServer(grpcthrottle.Shared(m)).ServerOptions())
		if _, err := call(context.Background(), e); err != nil {
			t.Fatal(err)
		}
		_, err = call(context.Background(), e)
		ri, _ := details(t, err)
		want, _ := m.WaitTime(1)
		if status.Code(err) != codes.ResourceExhausted || ri.GetRetryDelay().AsDuration() != want || want <= 0 {
			t.Fatalf("%v with RetryInfo %v, want ResourceExhausted with the Marker's %v", err, ri, want)
		}
		clk.Advance(want)
		if _, err := call(context.Background(), e); err != nil {
			t.Fatalf("after the RetryInfo: %v", err)
		}
	})
	t.Run("htb.Limiter", func(t *testing.T) {
		org, err := htb.NewQuota(4, throttle.Per(4, time.Second), throttle.WithClock(clk), throttle.WithName("org"))
		if err != nil {
			t.Fatal(err)
		}
		team, err := org.NewClass(htb.Config{Name: "team", Rate: throttle.Per(2, time.Second), Ceil: throttle.Per(2, time.Second), CeilBurst: 2})
		if err != nil {
			t.Fatal(err)
		}
		cl, err := htb.NewLimiter(team)
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, nil, grpcthrottle.NewServer(grpcthrottle.Shared(cl)).ServerOptions())
		for i := range 2 {
			if _, err := call(context.Background(), e); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		_, err = call(context.Background(), e)
		ri, qf := details(t, err)
		want, _ := cl.WaitTime(1)
		if status.Code(err) != codes.ResourceExhausted || ri.GetRetryDelay().AsDuration() != want || len(qf.GetViolations()) != 1 {
			t.Fatalf("%v with %v and %v, want a refusal of %v", err, ri, qf, want)
		}
	})
	t.Run("Keyed", func(t *testing.T) {
		keyed := throttle.NewKeyed(func(string) []throttle.Limit {
			return []throttle.Limit{{Name: "requests", Capacity: 1, Rate: throttle.Per(1, time.Second)}}
		}, throttle.WithClock(clk))
		cl := grpcthrottle.NewClient(grpcthrottle.PerKey(keyed, grpcthrottle.MetadataKey("x-api-key")), grpcthrottle.WithClock(clk))
		e := newEnv(t, nil, nil, cl.DialOptions()...)
		ctx := metadataOut(context.Background(), "x-api-key", "k1")
		if _, err := call(ctx, e); err != nil {
			t.Fatal(err)
		}
		dctx, cancel := context.WithDeadline(ctx, clk.Now().Add(time.Second/2))
		defer cancel()
		if _, err := call(dctx, e); status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("k1's second call: %v, want DeadlineExceeded from its own Gate", err)
		}
		if _, err := call(metadataOut(context.Background(), "x-api-key", "k2"), e); err != nil {
			t.Fatalf("k2: %v", err)
		}
	})
}
