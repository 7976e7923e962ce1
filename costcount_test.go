package throttle_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/htb"
)

// wantCostCount fails t unless err is the wrong-arity error with exactly
// the message msg.
func wantCostCount(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if !errors.Is(err, throttle.ErrInvalidCost) {
		t.Errorf("%s: err = %v, want ErrInvalidCost only", what, err)
		return
	}
	if err.Error() != msg {
		t.Errorf("%s: message %q, want %q", what, err.Error(), msg)
	}
}

func costCountLimiter(t *testing.T, clk clockwork.Clock) (*throttle.Limiter, *throttle.Bucket, *throttle.Bucket) {
	t.Helper()
	req, err := throttle.New(3, throttle.Per(3, time.Second), throttle.WithClock(clk), throttle.WithName("requests"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := throttle.New(100, throttle.Per(100, time.Second), throttle.WithClock(clk), throttle.WithName("tokens"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := throttle.NewLimiter(req, tok)
	if err != nil {
		t.Fatal(err)
	}
	return l, req, tok
}

func TestCostCountLimiter(t *testing.T) {
	l, req, tok := costCountLimiter(t, clockwork.NewFakeClock())
	const one = "throttle: invalid cost: got 1 cost for 2 buckets"
	_, err := l.TryAcquire(1)
	wantCostCount(t, "TryAcquire(1)", err, one)
	_, err = l.TryAcquire()
	wantCostCount(t, "TryAcquire()", err, "throttle: invalid cost: got 0 costs for 2 buckets")
	_, err = l.WaitTime(1)
	wantCostCount(t, "WaitTime(1)", err, one)
	// A single cost that is not positive is still the wrong number of costs
	// for two buckets.
	_, err = l.WaitTime(0)
	wantCostCount(t, "WaitTime(0)", err, "throttle: invalid cost: got 1 cost for 2 buckets")
	_, err = l.Acquire(t.Context(), 1)
	wantCostCount(t, "Acquire(1)", err, one)
	_, err = l.Acquire(t.Context(), 1, 1, 1)
	wantCostCount(t, "Acquire(1, 1, 1)", err, "throttle: invalid cost: got 3 costs for 2 buckets")
	if req.Tokens() != 3 || tok.Tokens() != 100 {
		t.Fatalf("failed calls spent: levels %v, %v", req.Tokens(), tok.Tokens())
	}

	p, err := l.Acquire(t.Context(), 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	wantCostCount(t, "Settle(1)", p.Settle(1), one)
	// The failed Settle changed nothing: the permit settles once, for real.
	if err := p.Settle(1, 4); err != nil {
		t.Fatalf("Settle after a wrong-arity Settle: %v", err)
	}
	if tok.Tokens() != 96 {
		t.Fatalf("tokens = %v after settling 4, want 96", tok.Tokens())
	}

	bp, err := req.AcquirePermit(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	wantCostCount(t, "Bucket permit Settle(1, 1)", bp.Settle(1, 1), "throttle: invalid cost: got 2 costs for 1 bucket")
	if err := bp.Cancel(); err != nil {
		t.Fatal(err)
	}
}

func TestCostCountKeyed(t *testing.T) {
	k := throttle.NewKeyed(func(string) []throttle.Limit {
		return []throttle.Limit{
			{Name: "requests", Capacity: 3, Rate: throttle.Per(3, time.Second)},
			{Name: "tokens", Capacity: 100, Rate: throttle.Per(100, time.Second)},
		}
	}, throttle.WithClock(clockwork.NewFakeClock()))
	const one = "throttle: invalid cost: got 1 cost for 2 buckets"
	check := func(state string) {
		t.Helper()
		_, err := k.TryAcquire("a", 1)
		wantCostCount(t, state+" TryAcquire", err, one)
		_, err = k.WaitTime("a", 1)
		wantCostCount(t, state+" WaitTime", err, one)
		_, err = k.WaitTime("a", 0)
		wantCostCount(t, state+" WaitTime(0)", err, one)
		_, err = k.Acquire(t.Context(), "a", 1)
		wantCostCount(t, state+" Acquire", err, one)
	}
	check("fresh key:")
	if n := k.Len(); n != 0 {
		t.Fatalf("failed calls made %d keys", n)
	}
	if ok, err := k.TryAcquire("a", 1, 1); !ok || err != nil {
		t.Fatalf("TryAcquire(1, 1) = %v, %v", ok, err)
	}
	check("compact key:")
	l := k.Limiter("a")
	check("held key:")
	_, err := l.TryAcquire(1)
	wantCostCount(t, "key's Limiter", err, one)
}

func TestCostCountClasses(t *testing.T) {
	clk := clockwork.NewFakeClock()
	root, err := htb.NewQuota(10, throttle.Per(10, time.Second), throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	a, err := root.NewClass(htb.Config{Name: "a", Rate: throttle.Per(5, time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.AcquirePermit(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	wantCostCount(t, "htb.Permit.Settle(1, 2)", p.Settle(1, 2), "throttle: invalid cost: got 2 costs for 1 class")
	if err := p.Settle(1); err != nil {
		t.Fatalf("Settle(1) after a wrong count: %v", err)
	}
	other, err := htb.NewQuota(10, throttle.Per(10, time.Second), throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	l, err := htb.NewLimiter(a, other)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.TryAcquire(1)
	wantCostCount(t, "htb.Limiter.TryAcquire(1)", err, "throttle: invalid cost: got 1 cost for 2 classes")
	_, err = l.WaitTime(1, 1, 1)
	wantCostCount(t, "htb.Limiter.WaitTime(1, 1, 1)", err, "throttle: invalid cost: got 3 costs for 2 classes")
}
