package redisbucket_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

func (r *rig) limiter(id string, limits []redisbucket.Limit, more ...redisbucket.Option) *redisbucket.Limiter {
	r.t.Helper()
	l, err := redisbucket.NewLimiter(r.be.Client(), id, limits, r.opts(more...)...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() {
		l.Close()
		if s := l.Stats(); s.FailureDecisions > 0 && !r.allowFailures {
			r.t.Errorf("limiter %s: %d decisions fell to the failure policy", id, s.FailureDecisions)
		}
	})
	return l
}

// rpmTPM is 3 requests and 100 tokens per minute.
var rpmTPM = []redisbucket.Limit{
	{Name: "rpm", Capacity: 3, Rate: throttle.Per(3, time.Minute)},
	{Name: "tpm", Capacity: 100, Rate: throttle.Per(100, time.Minute)},
}

func levels(t *testing.T, l *redisbucket.Limiter) []float64 {
	t.Helper()
	v, err := l.Tokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestLimiterAllOrNothing(t *testing.T) {
	r := newRig(t)
	l := r.limiter("llm", rpmTPM)
	try := func(req, tok int64, want bool) {
		t.Helper()
		ok, err := l.TryAcquire(req, tok)
		if err != nil {
			t.Fatal(err)
		}
		if ok != want {
			t.Fatalf("TryAcquire(%d, %d) = %v", req, tok, ok)
		}
	}
	try(1, 60, true)
	try(1, 60, false) // the token limit binds
	if got := levels(t, l); got[0] != 2 || got[1] != 40 {
		t.Fatalf("levels %v: a refused request spent", got)
	}
	w, err := l.WaitTime(1, 60)
	if err != nil || w != 12*time.Second { // 20 tokens at 100/min
		t.Fatalf("wait %v, %v", w, err)
	}
	try(1, 1, true)
	try(1, 1, true)
	try(1, 1, false) // now the request limit binds
	if got := levels(t, l); got[0] != 0 || got[1] != 38 {
		t.Fatalf("levels %v", got)
	}
	try(0, 30, true) // a zero cost leaves the limit out
	if _, err := l.TryAcquire(0, 0); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Fatalf("all-zero costs: %v", err)
	}
	if _, err := l.TryAcquire(1); !errors.Is(err, throttle.ErrInvalidCost) || err.Error() != "throttle: invalid cost: got 1 cost for 2 limits" {
		t.Fatalf("one cost for two limits: %v", err)
	}
	if _, err := l.TryAcquire(1, 101); !errors.Is(err, throttle.ErrCostExceedsCapacity) || !strings.Contains(err.Error(), `"tpm"`) {
		t.Fatalf("cost above capacity: %v", err)
	}
}

func TestLimiterAcquireWaitsForLatestLimit(t *testing.T) {
	r := newRig(t)
	l := r.limiter("wait", rpmTPM)
	ctx := context.Background()
	p, err := l.Acquire(ctx, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	// Settled at its estimate: the wait below rests on settled levels only
	// (an unsettled permit could give its costs back: estimates_test.go).
	if err := p.Settle(1, 100); err != nil {
		t.Fatal(err)
	}
	dl, cancel := context.WithDeadline(ctx, r.fc.Now().Add(time.Second))
	defer cancel()
	_, err = l.Acquire(dl, 1, 50)
	var we *throttle.WaitError
	if !errors.As(err, &we) || we.Limit != "tpm" || we.Wait != 30*time.Second {
		t.Fatalf("err %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, 1, 50)
		done <- err
	}()
	if err := r.fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.advance(30*time.Second - time.Microsecond)
	if err := r.fc.BlockUntilContext(ctx, 1); err != nil { // woke early? it must sleep again
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("granted early: %v", err)
	default:
	}
	r.advance(time.Microsecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestPermitSettle(t *testing.T) {
	r := newRig(t)
	l := r.limiter("settle", rpmTPM)
	ctx := context.Background()
	p, err := l.Acquire(ctx, 1, 80)
	if err != nil {
		t.Fatal(err)
	}
	if rp := p.(*redisbucket.Permit); rp.Mode() != redisbucket.ModeRedis || len(rp.ID()) != 32 {
		t.Fatalf("permit %v %q", rp.Mode(), rp.ID())
	}
	// The wrong number of values changes nothing: the permit stays open.
	if err := p.Settle(20); !errors.Is(err, throttle.ErrInvalidCost) || err.Error() != "throttle: invalid cost: got 1 cost for 2 limits" {
		t.Fatalf("Settle(20) on two limits: %v", err)
	}
	if err := p.Settle(1, 20); err != nil {
		t.Fatal(err)
	}
	if got := levels(t, l); got[0] != 2 || got[1] != 80 {
		t.Fatalf("levels after refund %v", got)
	}
	if err := p.Settle(1, 20); !errors.Is(err, throttle.ErrSettled) {
		t.Fatalf("second settle: %v", err)
	}
	if err := p.Cancel(); !errors.Is(err, throttle.ErrSettled) {
		t.Fatalf("cancel after settle: %v", err)
	}
	// A retry of the same settle (as after a timeout) applies nothing.
	if st, err := redisbucket.SettleRaw(p.(*redisbucket.Permit), 1, 0); err != nil || st != 2 {
		t.Fatalf("retried settle: status %d, %v", st, err)
	}
	if got := levels(t, l); got[1] != 80 {
		t.Fatalf("retried settle changed the level: %v", got)
	}

	// Extra use is charged, into debt; a waiter behind the debt waits for it.
	p2, err := l.Acquire(ctx, 1, 50)
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Settle(1, 130); err != nil {
		t.Fatal(err)
	}
	if got := levels(t, l); got[1] != -50 {
		t.Fatalf("level after charge %v", got)
	}
	w, _ := l.WaitTime(0, 10)
	if w != 36*time.Second { // 60 tokens at 100/min
		t.Fatalf("wait behind debt %v", w)
	}

	// Cancel returns everything.
	r.advance(time.Hour)
	p3, _ := l.Acquire(ctx, 2, 70)
	if err := p3.Cancel(); err != nil {
		t.Fatal(err)
	}
	if got := levels(t, l); got[0] != 3 || got[1] != 100 {
		t.Fatalf("levels after cancel %v", got)
	}
}

// Debt is bounded by one capacity, which keeps the script's integers
// exact: a charge that reaches the bound is taken; one that would go past
// it stops there, and Settle says so with throttle.ErrCostExceedsCapacity
// naming the limit, the permit settled all the same.
func TestSettleDebtBounded(t *testing.T) {
	r := newRig(t)
	l := r.limiter("debt", rpmTPM)
	ctx := context.Background()
	p, _ := l.Acquire(ctx, 1, 10)
	if err := p.Settle(1, 200); err != nil { // 90 - 190: exactly one capacity of debt
		t.Fatalf("a charge to the bound: %v", err)
	}
	if got := levels(t, l); got[1] != -100 {
		t.Fatalf("level %v, want -100", got)
	}
	r.advance(time.Hour)
	for _, actual := range []int64{201, 1 << 62} {
		p, _ := l.Acquire(ctx, 1, 10)
		err := p.Settle(1, actual)
		if !errors.Is(err, throttle.ErrCostExceedsCapacity) || !strings.Contains(err.Error(), `limit "tpm"`) {
			t.Fatalf("Settle(1, %d): %v, want ErrCostExceedsCapacity naming tpm", actual, err)
		}
		if got := levels(t, l); got[1] != -100 {
			t.Fatalf("level %v after Settle(1, %d), want -100", got, actual)
		}
		if err := p.Cancel(); !errors.Is(err, throttle.ErrSettled) {
			t.Fatalf("the capped permit is not settled: Cancel %v", err)
		}
		r.advance(time.Hour)
	}
}

// Under FailLocal the bound is the local bucket's capacity, with the same
// error.
func TestSettleDebtBoundedLocal(t *testing.T) {
	c := clientAt(t, closedPort(t))
	fc := clockwork.NewFakeClock()
	l, err := redisbucket.NewLimiter(c, "debt", rpmTPM, redisbucket.WithStartWithoutRedis(), redisbucket.WithClock(fc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	// The local buckets hold a tenth: 1 and 10.
	p, err := l.Acquire(context.Background(), 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Settle(1, 1000)
	if !errors.Is(err, throttle.ErrCostExceedsCapacity) || !strings.Contains(err.Error(), `limit "tpm"`) || !strings.Contains(err.Error(), "capacity (10)") {
		t.Fatalf("Settle(1, 1000) under FailLocal: %v, want ErrCostExceedsCapacity naming tpm and its local capacity", err)
	}
	if got, _ := l.WaitTime(0, 1); got != 66*time.Second { // 11 tokens at 100 per 10 minutes
		t.Fatalf("wait behind the local debt %v, want 66s", got)
	}
}

// Retrying an acquisition with the same permit id spends once.
func TestAcquireIdempotentPerPermit(t *testing.T) {
	r := newRig(t)
	l := r.limiter("idem", rpmTPM)
	for i, want := range []int64{1, 2, 2} {
		st, err := redisbucket.AcquireRaw(l, "fixed-id", 1, 10)
		if err != nil || st != want {
			t.Fatalf("attempt %d: status %d, %v", i, st, err)
		}
	}
	if got := levels(t, l); got[0] != 2 || got[1] != 90 {
		t.Fatalf("levels %v", got)
	}
}

// The state key expires when every limit is full again, and a full limiter
// leaves no key at all.
func TestExpiry(t *testing.T) {
	r := newRig(t)
	c := r.be.Client()
	ctx := context.Background()
	l := r.limiter("exp", rpmTPM)
	p, _ := l.Acquire(ctx, 1, 50)
	// rpm needs 20 s for 1 request, tpm 30 s for 50 tokens: the key lives 30 s.
	at, err := c.Do(ctx, "PEXPIRETIME", l.Key()).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if want := r.fc.Now().Add(30*time.Second).UnixMilli() + 1; at != want {
		t.Fatalf("PEXPIRETIME %d, want %d", at, want)
	}
	if err := p.Cancel(); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Exists(ctx, l.Key()).Result(); n != 0 {
		t.Fatal("a full limiter left its key")
	}
	// A limit that never refills keeps its key.
	z := r.bucket("zero", 2, throttle.Per(0, time.Second))
	z.TryAcquire(1)
	if ttl, _ := c.PTTL(ctx, z.Key()).Result(); ttl != -1 {
		t.Fatalf("no-refill key has TTL %v", ttl)
	}
}

func TestNewLimiterValidation(t *testing.T) {
	r := newRig(t)
	c := r.be.Client()
	bad := [][]redisbucket.Limit{
		nil,
		{{Name: "", Capacity: 1, Rate: throttle.Per(1, time.Second)}},
		{{Name: "a", Capacity: 1, Rate: throttle.Per(1, time.Second)}, {Name: "a", Capacity: 1, Rate: throttle.Per(1, time.Second)}},
		{{Name: "a", Capacity: 0, Rate: throttle.Per(1, time.Second)}},
	}
	for _, ls := range bad {
		if _, err := redisbucket.NewLimiter(c, "x", ls); err == nil {
			t.Errorf("NewLimiter(%v) accepted", ls)
		}
	}
	if _, err := redisbucket.NewLimiter(c, "x", rpmTPM, redisbucket.WithLease(redisbucket.Lease{})); err == nil {
		t.Error("lease mode accepted for a Limiter")
	}
	if _, err := redisbucket.NewLimiter(c, "x", rpmTPM, redisbucket.WithFailurePolicy(redisbucket.FailLocal(
		throttle.Per(1, time.Minute), throttle.Per(1, time.Minute), throttle.Per(1, time.Minute)))); err == nil {
		t.Error("FailLocal with 3 rates for 2 limits accepted")
	}
}
