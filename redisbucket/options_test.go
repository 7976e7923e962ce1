package redisbucket_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// TestInvalidOptions: every option value no limiter can run with is
// refused by the constructor with an error that matches
// throttle.ErrInvalidOption and names the option, never replaced by a
// default or left to fail at the first call.
func TestInvalidOptions(t *testing.T) {
	r := newRig(t)
	c := r.be.Client()
	rate := throttle.Per(10, time.Second)
	for _, tc := range []struct {
		name string
		opt  redisbucket.Option
		want string // in the message
	}{
		{"nil option", nil, "option 0 is nil"},
		{"nil clock", redisbucket.WithClock(nil), "WithClock(nil)"},
		{"prefix with a brace", redisbucket.WithPrefix("a{b"), `WithPrefix("a{b")`},
		{"zero call timeout", redisbucket.WithCallTimeout(0), "WithCallTimeout(0s)"},
		{"negative call timeout", redisbucket.WithCallTimeout(-time.Second), "WithCallTimeout(-1s)"},
		{"short permit TTL", redisbucket.WithPermitTTL(time.Millisecond), "WithPermitTTL(1ms)"},
		{"short fleet TTL", redisbucket.WithFleetTTL(time.Millisecond), "WithFleetTTL(1ms)"},
		{"negative fleet TTL", redisbucket.WithFleetTTL(-time.Second), "WithFleetTTL(-1s)"},
		{"negative wire headroom", redisbucket.WithWireHeadroom(-time.Millisecond), "WithWireHeadroom(-1ms)"},
		{"wire headroom past a second", redisbucket.WithWireHeadroom(2 * time.Second), "WithWireHeadroom(2s)"},
		{"probe min above max", redisbucket.WithProbeBackoff(time.Second, time.Millisecond), "WithProbeBackoff(1s, 1ms)"},
		{"zero probe", redisbucket.WithProbeBackoff(0, time.Second), "WithProbeBackoff(0s, 1s)"},
		{"zero policy", redisbucket.WithFailurePolicy(redisbucket.FailurePolicy{}), "WithFailurePolicy(FailurePolicy{})"},
		{"two FailLocal rates for one limit", redisbucket.WithFailurePolicy(redisbucket.FailLocal(rate, rate)), "FailLocal(2 rates)"},
		{"negative FailLocal rate", redisbucket.WithFailurePolicy(redisbucket.FailLocal(throttle.Per(-1, time.Second))), "FailLocal rate"},
		{"negative lease hold", redisbucket.WithLease(redisbucket.Lease{Hold: -time.Second}), "WithLease(Lease{Hold: -1s"},
		{"lease batch above capacity", redisbucket.WithLease(redisbucket.Lease{MaxBatch: 11}), "MaxBatch: 11"},
		{"negative lease share", redisbucket.WithLease(redisbucket.Lease{Share: -1}), "Share: -1"},
	} {
		_, err := redisbucket.New(c, "opt", 10, rate, tc.opt)
		if !errors.Is(err, throttle.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want throttle.ErrInvalidOption saying %s", tc.name, err, tc.want)
		}
	}
	_, err := redisbucket.NewLimiter(c, "opt", rpmTPM, redisbucket.WithLease(redisbucket.Lease{}))
	if !errors.Is(err, throttle.ErrInvalidOption) || !strings.Contains(err.Error(), "WithLease") {
		t.Errorf("lease mode for a Limiter: %v, want throttle.ErrInvalidOption naming WithLease", err)
	}
}
