package hoststore_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/hoststore"
)

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

func open(t *testing.T, path string) *hoststore.Store {
	t.Helper()
	s, err := hoststore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newLimiter(t *testing.T, s *hoststore.Store, clk clockwork.Clock) *hoststore.Limiter {
	t.Helper()
	l, err := hoststore.NewLimiter(s, "github", 10, throttle.Per(5, time.Second), hoststore.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestTwoHandlesShareOneBucket opens the file twice, as two processes do:
// what one takes the other cannot.
func TestTwoHandlesShareOneBucket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quota")
	clk := clockwork.NewFakeClockAt(t0)
	a, b := newLimiter(t, open(t, path), clk), newLimiter(t, open(t, path), clk)
	for i := range 10 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if _, ok, err := l.TryAcquirePermit(1); !ok || err != nil {
			t.Fatalf("grant %d of the burst of 10: %v, %v", i, ok, err)
		}
	}
	if _, ok, _ := b.TryAcquirePermit(1); ok {
		t.Fatal("an 11th token out of a bucket of 10")
	}
	if w, _ := a.WaitTime(1); w != 200*time.Millisecond {
		t.Errorf("WaitTime(1) = %v, want 200ms at 5/s", w)
	}
	clk.Advance(200 * time.Millisecond)
	if _, ok, _ := b.TryAcquirePermit(1); !ok {
		t.Error("no token 200ms later at 5/s")
	}
}

// TestAcquireReservesInstantsInArrivalOrder checks that waiting callers are
// granted first come, first served, each at the instant the rate allows,
// and that a wait past the deadline fails at once taking nothing.
func TestAcquireReservesInstantsInArrivalOrder(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	l := newLimiter(t, open(t, filepath.Join(t.TempDir(), "quota")), clk)
	if _, err := l.Acquire(t.Context(), 10); err != nil {
		t.Fatal(err)
	}
	short, cancel := clockwork.WithTimeout(t.Context(), clk, 100*time.Millisecond)
	defer cancel()
	var we *throttle.WaitError
	if _, err := l.Acquire(short, 1); !errors.As(err, &we) || we.Wait != 200*time.Millisecond {
		t.Fatalf("Acquire with 100ms of a 200ms wait = %v, want a WaitError of 200ms", err)
	}
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			if _, err := l.Acquire(context.Background(), 1); err != nil {
				t.Error(err)
			}
			order <- i
		}()
		// Each reserves its instant before the next starts.
		if err := clk.BlockUntilContext(t.Context(), i+2); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		clk.Advance(200 * time.Millisecond)
		if got := <-order; got != i {
			t.Fatalf("grant %d went to caller %d", i, got)
		}
	}
}

func TestSettleRefundAndPause(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	s := open(t, filepath.Join(t.TempDir(), "quota"))
	l := newLimiter(t, s, clk)
	p, err := l.Acquire(t.Context(), 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(3); err != nil { // 5 back: 7 left
		t.Fatal(err)
	}
	if err := p.Cancel(); !errors.Is(err, throttle.ErrSettled) {
		t.Errorf("Cancel after Settle = %v, want ErrSettled", err)
	}
	q, _, _ := l.TryAcquirePermit(7)
	if q == nil {
		t.Fatal("7 left after settling 8 down to 3, but TryAcquire(7) failed")
	}
	if err := q.Cancel(); err != nil { // refused upstream: all 7 back
		t.Fatal(err)
	}
	if r := l.Status(nil)[0].Remaining; r != 7 {
		t.Errorf("Remaining after the refund = %d, want 7", r)
	}
	// A pause set through one handle holds the other's calls.
	other := newLimiter(t, open(t, s.Path()), clk)
	l.PauseUntil(clk.Now().Add(time.Second))
	if _, ok, _ := other.TryAcquirePermit(1); ok {
		t.Error("a call went through another process's pause")
	}
	if st := other.Status(nil)[0]; !st.Paused.Equal(clk.Now().Add(time.Second)) {
		t.Errorf("Status.Paused = %v", st.Paused)
	}
	// A call whose deadline comes before the pause's end is refused with
	// the pause named.
	ctx, cancel := clockwork.WithTimeout(t.Context(), clk, 500*time.Millisecond)
	_, err = other.Acquire(ctx, 1)
	cancel()
	var we *throttle.WaitError
	if !errors.As(err, &we) || !we.Paused.Equal(clk.Now().Add(time.Second)) || we.Wait != time.Second {
		t.Errorf("Acquire inside the pause = %v, want a WaitError of 1s naming the pause", err)
	}
	clk.Advance(time.Second)
	if _, ok, _ := other.TryAcquirePermit(1); !ok {
		t.Error("no call after the pause ended")
	}
}

func TestInvalidLimiters(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "quota"))
	for _, c := range []struct {
		capacity int64
		rate     throttle.Rate
	}{{0, throttle.Per(1, time.Second)}, {1, throttle.Per(0, time.Second)}, {1, throttle.Inf}, {1 << 40, throttle.Per(1, time.Hour)}} {
		if _, err := hoststore.NewLimiter(s, "x", c.capacity, c.rate); !errors.Is(err, throttle.ErrInvalidOption) {
			t.Errorf("NewLimiter(%d, %v) = %v, want ErrInvalidOption", c.capacity, c.rate, err)
		}
	}
	l := newLimiter(t, s, clockwork.NewFakeClockAt(t0))
	if _, err := l.Acquire(t.Context(), 11); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
		t.Errorf("a cost above the capacity: %v", err)
	}
}
