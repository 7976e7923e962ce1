package redisbucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/throttlekit/throttle/redisbucket"
)

// A give-back from the Taker's Settle costs no call of its own: the
// Limiter's next call carries it, and the fleet sees it from then on;
// capped at the capacity as a settle call's.
func TestSettleGiveBackCarriedByNextCall(t *testing.T) {
	r := newRig(t)
	a, b := r.limiter("carry", rpmTPM), r.limiter("carry", rpmTPM)
	ctx := context.Background()
	if _, err := a.Take(ctx, 1, 100); err != nil {
		t.Fatal(err)
	}
	calls := a.Stats().Calls
	if err := a.Settle([]int64{1, 100}, []int64{1, 40}); err != nil {
		t.Fatal(err)
	}
	if n := a.Stats().Calls - calls; n != 0 {
		t.Fatalf("Settle that gives back made %d calls, want 0", n)
	}
	if got, err := b.Tokens(ctx); err != nil || got[1] != 0 {
		t.Fatalf("other process sees %v %v before any call carried the give-back, want 0 tokens", got, err)
	}
	if _, err := a.Take(ctx, 1, 10); err != nil { // carries 60 back, takes 10
		t.Fatal(err)
	}
	if n := a.Stats().Calls - calls; n != 1 {
		t.Fatalf("Take after Settle made %d calls, want 1", n)
	}
	if got, err := b.Tokens(ctx); err != nil || got[1] != 50 {
		t.Fatalf("other process sees %v %v, want 50 tokens: 60 given back, 10 taken", got, err)
	}
	// Capped at capacity, as a settle call is.
	if err := a.Settle([]int64{0, 100}, []int64{0, 0}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Tokens(ctx); err != nil || got[1] != 100 {
		t.Fatalf("levels %v %v after giving back 100 on 50, want the capacity, 100", got, err)
	}
}

// A call that carried a give-back and failed gives it up: it may have been
// applied, and applied twice it would mint tokens.
func TestSettleGiveBackGivenUpWhenItsCallFails(t *testing.T) {
	r, m := miniRig(t)
	l, err := redisbucket.NewLimiter(miniClient(t, m), "carryfail", rpmTPM, r.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ctx := context.Background()
	if _, err := l.Take(ctx, 1, 100); err != nil {
		t.Fatal(err)
	}
	if err := l.Settle([]int64{1, 100}, []int64{1, 0}); err != nil {
		t.Fatal(err)
	}
	m.SetError("ERR injected")
	if _, err := l.Tokens(ctx); err == nil {
		t.Fatal("Tokens succeeded against a server answering errors")
	}
	m.SetError("")
	if got, err := l.Tokens(ctx); err != nil || got[1] != 0 {
		t.Fatalf("levels %v %v, want 0 tokens: the failed call's give-back dropped", got, err)
	}
}

// Lower makes no call when the levels last heard, refilled since, are at
// or below what the server reports; below them it lowers the fleet.
func TestLowerSkipsWhatCannotLower(t *testing.T) {
	r := newRig(t)
	a, b := r.limiter("lowerskip", rpmTPM), r.limiter("lowerskip", rpmTPM)
	ctx := context.Background()
	if _, err := a.Take(ctx, 1, 80); err != nil { // 20 tokens left
		t.Fatal(err)
	}
	calls := a.Stats().Calls
	a.Lower(1, 25)
	if n := a.Stats().Calls - calls; n != 0 {
		t.Fatalf("Lower above the level made %d calls, want 0", n)
	}
	// The reply carried the fraction (none): 20 is the level, not 21, and
	// a report of 20 lowers nothing.
	a.Lower(1, 20)
	if n := a.Stats().Calls - calls; n != 0 {
		t.Fatalf("Lower at the level made %d calls, want 0", n)
	}
	a.Lower(1, 5)
	if n := a.Stats().Calls - calls; n != 1 {
		t.Fatalf("Lower below the level made %d calls, want 1", n)
	}
	if got, err := b.Tokens(ctx); err != nil || got[1] != 5 {
		t.Fatalf("other sees %v %v, want 5 tokens", got, err)
	}
	// Refilled on the clock: after 12 s, 20 more at most.
	r.advance(12 * time.Second)
	a.Lower(1, 24)
	if n := a.Stats().Calls - calls; n != 2 {
		t.Fatalf("Lower under the refilled view made %d calls in all, want 2", n)
	}
	if got, err := b.Tokens(ctx); err != nil || got[1] != 24 {
		t.Fatalf("other sees %v %v, want 24 tokens", got, err)
	}
}

// Status reports the levels this process heard within StatusFresh,
// refilled since, without a call; an older view is read again.
func TestStatusFromFreshView(t *testing.T) {
	r := newRig(t)
	l := r.limiter("statusview", rpmTPM)
	if _, err := l.Take(context.Background(), 1, 40); err != nil {
		t.Fatal(err)
	}
	calls := l.Stats().Calls
	r.advance(1500 * time.Millisecond) // 0.075 requests and 2.5 tokens back
	st := l.Status(nil)
	if n := l.Stats().Calls - calls; n != 0 || st[0].Remaining != 2 || st[1].Remaining != 62 {
		t.Fatalf("Status %+v with %d calls, want 2 requests and 62 tokens, no call", st, n)
	}
	r.advance(redisbucket.StatusFresh)
	st = l.Status(nil)
	if n := l.Stats().Calls - calls; n != 1 || st[1].Remaining != 65 {
		t.Fatalf("Status %+v with %d calls after StatusFresh, want 65 tokens read in one call", st, n)
	}
}
