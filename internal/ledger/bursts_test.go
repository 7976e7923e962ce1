package ledger

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// TestBurstLeftByAllItsCallsEnds: a burst whose only call is given back
// before it is sent ends without a correction (the server saw nothing),
// and the next call from the full bucket opens a burst of its own; an
// answer ends a burst once, a later answer of the same burst lowering
// nothing.
func TestBurstLeftByAllItsCallsEnds(t *testing.T) {
	fc := clockwork.NewFakeClock()
	b, _ := throttle.New(100, throttle.Per(100, 100*time.Millisecond), throttle.WithName("tokens"), throttle.WithClock(fc))
	l, _ := throttle.NewLimiter(b)
	ref := Ref{l, 0}
	var k Bursts
	take := func(cost int64) (uint64, []Wait) {
		t.Helper()
		costs := []int64{cost}
		full := Full(l, costs)
		if ok, err := l.TryAcquire(cost); !ok || err != nil {
			t.Fatalf("TryAcquire(%d) = %v, %v", cost, ok, err)
		}
		return k.Join(l, costs, full)
	}

	mask, waits := take(60)
	if mask != 1 || len(waits) != 0 {
		t.Fatalf("a call from full: mask %b, %d waits; want 1, none", mask, len(waits))
	}
	k.Leave(l, []int64{60}, mask)
	l.Settle([]int64{60}, []int64{0}) // the call given back, as giveBack does
	if len(k.m) != 0 {
		t.Fatalf("%d bursts open after their only call left", len(k.m))
	}
	if got := b.Status().Level; got != 100 {
		t.Fatalf("level %v after the call was given back, want 100", got)
	}

	// A new burst of two calls that fill the bucket.
	m1, _ := take(60)
	m2, _ := take(40)
	if m1 != 1 || m2 != 1 || k.m[ref].taken != 100 {
		t.Fatalf("masks %b %b, burst reserved %d; want 1, 1, 100", m1, m2, k.m[ref].taken)
	}
	fc.Advance(30 * time.Millisecond) // the client counts 30 tokens the server never had
	k.Answered(l, m1)
	if got := b.Status().Level; got != 0 {
		t.Fatalf("level %v after the first answer, want 0", got)
	}
	fc.Advance(10 * time.Millisecond)
	k.Answered(l, m2)
	if got := b.Status().Level; got != 10 {
		t.Fatalf("level %v after the second answer, want 10: the burst was over", got)
	}
}
