package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// TestPaceSpacing sends 1,000 Acquires one after another through a 100/s
// pace and checks, on the fake clock, that each is granted exactly 10 ms
// after the one before: not a nanosecond earlier, not later.
func TestPaceSpacing(t *testing.T) {
	const n = 1000
	clk := clockwork.NewFakeClock()
	b, err := throttle.New(1, throttle.Per(100, time.Second), throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if b.Capacity() != 1 {
		t.Fatalf("capacity %d, want 1", b.Capacity())
	}
	ctx, cancel := context.WithCancel(context.Background())
	grants := make(chan time.Time, n+1)
	done := make(chan error, 1)
	go func() {
		// One call more than the test counts, so that after the last
		// counted grant a timer is armed again and the loop below never
		// waits for one that does not come; cancel ends it.
		for range n + 1 {
			if err := b.Acquire(ctx, 1); err != nil {
				done <- err
				return
			}
			grants <- clk.Now()
		}
		done <- nil
	}()
	start := clk.Now()
	prev := <-grants
	if !prev.Equal(start) {
		t.Fatalf("first grant at %v, want at once", prev.Sub(start))
	}
	// granted reports whether the waiting call was granted by the last
	// Advance. BlockUntilContext returns once a timer is armed: at once if
	// the waiter's timer did not fire, or after the granted call has sent
	// its instant and queued again, which it does before arming anew.
	granted := func() (time.Time, bool) {
		if err := clk.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		select {
		case g := <-grants:
			return g, true
		default:
			return time.Time{}, false
		}
	}
	if _, ok := granted(); ok {
		t.Fatal("second call granted with no time passing")
	}
	for i := 1; i < n; i++ {
		clk.Advance(10*time.Millisecond - time.Nanosecond)
		if g, ok := granted(); ok {
			t.Fatalf("grant %d came %v after the one before, want 10ms", i, g.Sub(prev))
		}
		clk.Advance(time.Nanosecond)
		g, ok := granted()
		if !ok {
			t.Fatalf("grant %d did not come 10ms after the one before", i)
		}
		if d := g.Sub(prev); d != 10*time.Millisecond {
			t.Fatalf("grant %d came %v after the one before, want 10ms", i, d)
		}
		prev = g
	}
	if got, want := prev.Sub(start), (n-1)*10*time.Millisecond; got != want {
		t.Errorf("%d grants took %v, want %v", n, got, want)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the extra call ended with %v, want context.Canceled", err)
	}
}

// TestPaceUnevenInterval: at 3/s the interval is 333 333 333.3 ns. A
// bucket of capacity 1 keeps no fraction above its one token, so each grant
// comes the interval rounded up, 333 333 334 ns, after the one before: not
// a nanosecond earlier.
func TestPaceUnevenInterval(t *testing.T) {
	clk := clockwork.NewFakeClock()
	b, err := throttle.New(1, throttle.Per(3, time.Second), throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	start := clk.Now()
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("first call refused")
	}
	for n := int64(1); n <= 300; n++ {
		w, err := b.WaitTime(1)
		if err != nil {
			t.Fatal(err)
		}
		if w <= 0 {
			t.Fatalf("grant %d: WaitTime %v right after a grant", n, w)
		}
		clk.Advance(w - time.Nanosecond)
		if ok, _ := b.TryAcquire(1); ok {
			t.Fatalf("grant %d possible a nanosecond early", n)
		}
		clk.Advance(time.Nanosecond)
		want := time.Duration(n * 333_333_334)
		if got := clk.Now().Sub(start); got != want {
			t.Fatalf("grant %d at %v, want %v", n, got, want)
		}
		if ok, _ := b.TryAcquire(1); !ok {
			t.Fatalf("grant %d refused after WaitTime %v", n, w)
		}
	}
	if _, err := b.WaitTime(2); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
		t.Errorf("cost 2: %v, want ErrCostExceedsCapacity", err)
	}
}

func ExampleNew_pace() {
	clk := clockwork.NewFakeClock()
	// At most 100 calls a second, never two closer than 10 ms.
	pace, err := throttle.New(1, throttle.Per(100, time.Second), throttle.WithClock(clk))
	if err != nil {
		panic(err)
	}
	start := clk.Now()
	for range 3 {
		for {
			w, _ := pace.WaitTime(1)
			clk.Advance(w)
			if ok, _ := pace.TryAcquire(1); ok {
				break
			}
		}
		fmt.Println("call at", clk.Now().Sub(start))
	}
	// Output:
	// call at 0s
	// call at 10ms
	// call at 20ms
}
