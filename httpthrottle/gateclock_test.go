package httpthrottle

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/htb"
	"github.com/throttlekit/throttle/trtcm"
)

// TestGateClock: the Transport reads pauses and deadlines on the clock the
// Gate sleeps on: a Limiter's, an htb.Limiter's and a Marker's fake clock
// each, found without any table for the last two; the real clock for a
// Gate that says nothing of its clock.
func TestGateClock(t *testing.T) {
	clk := newClock()
	b, err := throttle.New(10, throttle.Per(10, time.Second), throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	lim := must(throttle.NewLimiter(b))
	org, err := htb.NewQuota(10, throttle.Per(10, time.Second), throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	cl := must(htb.NewLimiter(org))
	m, err := trtcm.New(throttle.Per(1, time.Second), 1, throttle.Per(2, time.Second), 2, throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	for name, g := range map[string]throttle.Gate{"Limiter": lim, "htb.Limiter": cl, "trtcm.Marker": m} {
		if got := gateClock(g); got != clockwork.Clock(clk) {
			t.Errorf("%s: gateClock = %v, want its fake clock", name, got)
		}
	}
	// A zero htb.Limiter has no classes, so no clock of its own.
	if got := gateClock(new(htb.Limiter)); got == nil || got == clockwork.Clock(clk) {
		t.Errorf("zero htb.Limiter: gateClock = %v, want the real clock", got)
	}
}
