package throttletest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
)

// conformTaker takes and settles without a Permit, under the rules of
// Acquire and Permit.Settle: a settlement down gives the difference back,
// one up (or of a call taken without its turn) charges it, and a wait
// past the deadline fails at once and takes nothing.
func conformTaker(t *testing.T, newGate NewGate) {
	g := newGate(t, 10, throttle.Per(1, time.Minute))
	tk, ok := g.(throttle.Taker)
	if !ok {
		t.Skip("not a Taker")
	}
	if ok, err := tk.TryAcquire(10); !ok || err != nil {
		t.Fatalf("TryAcquire(10) of a full bucket = %v, %v", ok, err)
	}
	if ok, _ := tk.TryAcquire(1); ok {
		t.Fatal("TryAcquire(1) of an empty bucket went through")
	}
	if err := tk.Settle([]int64{10}, []int64{4}); err != nil {
		t.Fatal(err)
	}
	now, cancelNow := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancelNow()
	if _, err := tk.Take(now, 6); err != nil {
		t.Errorf("the 6 settled back: Take(6) = %v", err)
	}
	if err := tk.Settle([]int64{0}, []int64{2}); err != nil { // a call made without its turn
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	var we *throttle.WaitError
	if _, err := tk.Take(ctx, 1); !errors.As(err, &we) || we.Wait < 2*time.Minute {
		t.Errorf("Take(1) two tokens in debt, with 50ms = %v, want a *WaitError of over 2m", err)
	}
	if err := tk.Settle([]int64{4}, []int64{0}); err != nil { // a call never made
		t.Fatal(err)
	}
	if ok, err := tk.TryAcquire(2); !ok || err != nil {
		t.Errorf("after 4 given back from 2 in debt, TryAcquire(2) = %v, %v", ok, err)
	}
}

// conformLeveler lowers a full bucket to what a server says is left: no
// more than that goes through, and a higher count raises nothing.
func conformLeveler(t *testing.T, newGate NewGate) {
	g := newGate(t, 10, throttle.Per(1, time.Minute))
	lv, ok := g.(throttle.Leveler)
	if !ok {
		t.Skip("not a Leveler")
	}
	lv.Lower(0, 3)
	lv.Lower(0, 8)
	if _, ok, err := g.TryAcquirePermit(3); !ok || err != nil {
		t.Fatalf("lowered to 3: TryAcquirePermit(3) = %v, %v", ok, err)
	}
	if _, ok, _ := g.TryAcquirePermit(1); ok {
		t.Error("a token beyond the 3 a server said were left")
	}
}
