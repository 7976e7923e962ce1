package throttle

import (
	"testing"
	"time"
)

// TestJoinFarPause is issue 29's case: a bucket paused until year 9999
// joined into a Limiter with an older bucket stays paused and empty, so
// the two grant at most 5 within the second, not 10.
func TestJoinFarPause(t *testing.T) {
	clk := newClock()
	older, err := New(5, Per(1, time.Hour), WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	b, err := New(5, Per(1, time.Hour), WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.TryAcquire(5); !ok {
		t.Fatal("TryAcquire(5) on a full bucket refused")
	}
	b.PauseUntil(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	if _, err := NewLimiter(older, b); err != nil {
		t.Fatal(err)
	}
	granted := 0
	for _, x := range []*Bucket{older, b} {
		for range 5 {
			if ok, _ := x.TryAcquire(1); ok {
				granted++
			}
		}
	}
	if granted > 5 {
		t.Fatalf("granted %d within one second, bound 5", granted)
	}
	if _, paused := b.PausedUntil(); !paused {
		t.Fatal("the join ended the pause")
	}
}

// FuzzJoinPaused joins a paused bucket into a Limiter with a bucket made
// gap earlier or later, and wants the join to change nothing the bucket
// says or does: its pause, its level, its wait, at the join and after.
func FuzzJoinPaused(f *testing.F) {
	f.Add(int64(time.Second), int64(0), int64(5), int64(5), int64(time.Second), false)
	f.Add(int64(time.Second), int64(0), int64(5), int64(5), int64(time.Second), true) // year 9999
	f.Add(int64(-time.Second), int64(time.Minute), int64(3), int64(1), int64(time.Hour), false)
	f.Add(int64(time.Hour), int64(-time.Minute), int64(7), int64(2), int64(0), true)
	f.Add(int64(1), int64(1<<62), int64(1), int64(1), int64(1<<40), false)
	f.Fuzz(func(t *testing.T, gap, pause, capacity, spend, after int64, far bool) {
		gap %= int64(24 * time.Hour)
		capacity = 1 + abs64(capacity)%20
		spend = abs64(spend) % (capacity + 1)
		after = abs64(after) % int64(48*time.Hour)
		clk := newClock()
		mk := func() *Bucket {
			b, err := New(capacity, Per(1, time.Hour), WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		// other is made gap before b (after it for a negative gap).
		var other, b *Bucket
		if gap >= 0 {
			other = mk()
			clk.Advance(time.Duration(gap))
			b = mk()
		} else {
			b = mk()
			clk.Advance(time.Duration(-gap))
			other = mk()
		}
		if spend > 0 {
			if ok, _ := b.TryAcquire(spend); !ok {
				t.Fatalf("TryAcquire(%d) on a full bucket refused", spend)
			}
		}
		until := clk.Now().Add(time.Duration(pause))
		if far {
			until = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		b.PauseUntil(until)
		type view struct {
			until  time.Time
			paused bool
			tokens float64
			wait   time.Duration
			werr   bool
		}
		look := func() view {
			var v view
			v.until, v.paused = b.PausedUntil()
			v.tokens = b.Tokens()
			w, err := b.WaitTime(1)
			v.wait, v.werr = w, err != nil
			return v
		}
		before := look()
		if _, err := NewLimiter(other, b); err != nil {
			t.Fatal(err)
		}
		got := look()
		if forever := 100 * 365 * 24 * time.Hour; before.paused && before.wait > forever {
			// A pause past what a time line holds (2^63 ns from its epoch)
			// is at never on both, which are gap apart: both forever.
			if !got.paused || got.wait <= forever || got.tokens != before.tokens {
				t.Fatalf("the join changed a pause forever: before %+v, after %+v", before, got)
			}
		} else if got != before {
			t.Fatalf("the join changed the bucket: before %+v, after %+v", before, got)
		}
		clk.Advance(time.Duration(after))
		want := before.paused && clk.Now().Before(before.until)
		if _, paused := b.PausedUntil(); paused != want {
			t.Fatalf("%v after the join: paused %v, want %v (pause until %v)", time.Duration(after), paused, want, before.until)
		}
		if want {
			if ok, _ := b.TryAcquire(1); ok {
				t.Fatalf("a paused bucket granted %v after the join", time.Duration(after))
			}
		}
	})
}

func abs64(x int64) int64 {
	if x < 0 {
		if x == -x {
			return 0
		}
		return -x
	}
	return x
}
