package ledger

import (
	"math"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/testwait"
)

func TestRefillTime(t *testing.T) {
	for _, c := range []struct {
		n, tokens int64
		period    time.Duration
		want      time.Duration
	}{
		{0, 1, time.Second, 0},
		{-5, 1, time.Second, 0},
		{1, 3, time.Second, 333333334 * time.Nanosecond}, // rounded up
		{3, 3, time.Second, time.Second},
		{1, 0, time.Second, math.MaxInt64},
		{math.MaxInt64, 1, time.Hour, math.MaxInt64},
	} {
		if got := RefillTime(c.n, c.tokens, c.period); got != c.want {
			t.Errorf("RefillTime(%d, %d, %v) = %v, want %v", c.n, c.tokens, c.period, got, c.want)
		}
	}
	if got := SatAdd[time.Duration](math.MaxInt64-1, 2); got != math.MaxInt64 {
		t.Errorf("SatAdd wrapped: %v", got)
	}
}

// TestFlights: what is in flight is counted per limit until settled, and a
// limit with nothing left is idle again.
func TestFlights(t *testing.T) {
	b, _ := throttle.New(10, throttle.Per(10, time.Second))
	c, _ := throttle.New(10, throttle.Per(10, time.Second))
	l, _ := throttle.NewLimiter(b, c)
	var f Flights
	f.Add(l, []int64{3, 0})
	f.Add(l, []int64{2, 4})
	if got := f.Unsettled(Ref{l, 0}); got != 5 || f.Idle(l, 2) {
		t.Fatalf("unsettled %d, idle %v; want 5, false", got, f.Idle(l, 2))
	}
	f.Settled(l, []int64{5, 0})
	if f.Idle(l, 2) || f.Unsettled(Ref{l, 1}) != 4 {
		t.Fatal("limit 1 forgot what is in flight on it")
	}
	f.Settled(l, []int64{0, 4})
	if !f.Idle(l, 2) || f.Unsettled(Ref{l, 0}) != 0 {
		t.Fatal("everything settled, not idle")
	}
}

// TestResets: a raise is due until its instant, when its tokens go in, and
// a second one for the same limit is not scheduled meanwhile.
func TestResets(t *testing.T) {
	clk := clockwork.NewFakeClock()
	b, _ := throttle.New(10, throttle.Per(1, time.Hour), throttle.WithClock(clk))
	l, _ := throttle.NewLimiter(b)
	l.TryAcquire(10)
	var w Resets
	w.At(l, l, 1, 0, 10, time.Minute, clk)
	w.At(l, l, 1, 0, 3, time.Second, clk)
	n, at, ok := w.Due(Ref{l, 0})
	if !ok || n != 10 || !at.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("Due = %d, %v, %v; want 10 in a minute", n, at, ok)
	}
	clk.Advance(time.Minute)
	// The fake clock runs the raise in a goroutine of its own.
	testwait.Queued(t, func() int {
		if _, _, due := w.Due(Ref{l, 0}); due {
			return 1
		}
		return 0
	}, 1, nil)
	if got := b.Status().Level; got != 10 {
		t.Fatalf("level %v after the reset, want 10", got)
	}
}
