package auto_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
)

// TestOptionsRefused: the same for New's options.
func TestOptionsRefused(t *testing.T) {
	for _, tt := range []struct {
		opt  auto.Option
		want string
	}{
		{auto.Clock(nil), "auto.Clock(nil)"},
		{auto.Key(nil), "auto.Key(nil)"},
		{auto.Within(nil), "auto.Within(nil)"},
		{auto.Observer(nil), "auto.Observer(nil)"},
		{auto.Fleet(nil), "auto.Fleet(nil)"},
		{auto.InitialRate(throttle.Inf), "auto.InitialRate(Inf)"},
		{auto.InitialRate(throttle.Rate{}), "auto.InitialRate("},
		{auto.Range(throttle.Per(10, time.Second), throttle.Per(1, time.Second)), "auto.Range("},
		{auto.Range(throttle.Inf, throttle.Inf), "auto.Range(Inf, Inf)"},
		{auto.Idle(0), "auto.Idle(0s)"},
		{auto.MaxQuotas(0), "auto.MaxQuotas(0)"},
	} {
		a, err := auto.New(tt.opt)
		if !errors.Is(err, throttle.ErrInvalidOption) || !strings.Contains(err.Error(), tt.want) || a != nil {
			t.Errorf("%s: %v; want an ErrInvalidOption naming it", tt.want, err)
		}
	}
	if _, err := auto.New(auto.Range(throttle.Per(1, time.Second), throttle.Inf), auto.MaxQuotas(1)); err != nil {
		t.Errorf("options at the ends of their ranges: %v", err)
	}
}
