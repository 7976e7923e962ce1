package pool_test

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/pool"
)

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// key is one API key's quota: rpm requests and tpm tokens a minute, each
// bucket holding a minute's worth.
func key(t *testing.T, clk clockwork.Clock, rpm, tpm int64) *throttle.Limiter {
	t.Helper()
	req, err := throttle.New(rpm, throttle.Per(rpm, time.Minute), throttle.WithClock(clk), throttle.WithName("requests"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := throttle.New(tpm, throttle.Per(tpm, time.Minute), throttle.WithClock(clk), throttle.WithName("tokens"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := throttle.NewLimiter(req, tok)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newPool(t *testing.T, ms ...pool.Member) *pool.Pool {
	t.Helper()
	p, err := pool.New(ms)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// take takes costs from p at once and returns the member that served them.
func take(t *testing.T, p *pool.Pool, costs ...int64) string {
	t.Helper()
	pm, ok, err := p.TryAcquirePermit(costs...)
	if err != nil || !ok {
		t.Fatalf("TryAcquirePermit(%v) = %v, %v", costs, ok, err)
	}
	return pm.(*pool.Permit).Member().Name
}
