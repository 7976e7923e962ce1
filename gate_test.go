package throttle_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/htb"
	"github.com/throttlekit/throttle/trtcm"
)

// The Gates of the core, and what the Transport may find on them.
var (
	_ throttle.Gate    = (*throttle.Limiter)(nil)
	_ throttle.Gate    = (*htb.Limiter)(nil)
	_ throttle.Pauser  = (*throttle.Limiter)(nil)
	_ throttle.Leveler = (*throttle.Limiter)(nil)
	_ throttle.Taker   = (*throttle.Limiter)(nil)
)

// gateEpoch is when the Gates' fake clocks start.
var gateEpoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// gateKinds makes, for each in-process kind of Gate, one of two limits:
// "requests", 5 at 5 a second, and "tokens", 100 at 100 a second.
var gateKinds = []struct {
	name string
	make func(t *testing.T, clk clockwork.Clock) throttle.Gate
}{
	{"Limiter", func(t *testing.T, clk clockwork.Clock) throttle.Gate {
		req := must(throttle.New(5, throttle.Per(5, time.Second), throttle.WithClock(clk), throttle.WithName("requests")))
		tok := must(throttle.New(100, throttle.Per(100, time.Second), throttle.WithClock(clk), throttle.WithName("tokens")))
		return must(throttle.NewLimiter(req, tok))
	}},
	{"Keyed", func(t *testing.T, clk clockwork.Clock) throttle.Gate {
		k := throttle.NewKeyed(func(string) []throttle.Limit {
			return []throttle.Limit{
				{Name: "requests", Capacity: 5, Rate: throttle.Per(5, time.Second)},
				{Name: "tokens", Capacity: 100, Rate: throttle.Per(100, time.Second)},
			}
		}, throttle.WithClock(clk))
		return k.Limiter("tenant")
	}},
	{"htb.Limiter", func(t *testing.T, clk clockwork.Clock) throttle.Gate {
		req := must(htb.NewQuota(5, throttle.Per(5, time.Second), throttle.WithClock(clk), throttle.WithName("requests")))
		tok := must(htb.NewQuota(100, throttle.Per(100, time.Second), throttle.WithClock(clk), throttle.WithName("tokens")))
		return must(htb.NewLimiter(req, tok))
	}},
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestGateContract runs every kind of Gate through the same contract: the
// Transport, Handler and the gRPC interceptors rely on nothing else.
func TestGateContract(t *testing.T) {
	for _, kind := range gateKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Run("Limits", func(t *testing.T) {
				g := kind.make(t, clockwork.NewFakeClockAt(gateEpoch))
				want := []throttle.Limit{
					{Name: "requests", Capacity: 5, Rate: throttle.Per(5, time.Second)},
					{Name: "tokens", Capacity: 100, Rate: throttle.Per(100, time.Second)},
				}
				if got := g.Limits(); !slices.Equal(got, want) {
					t.Errorf("Limits() = %v, want %v", got, want)
				}
			})
			t.Run("TryAcquirePermit", func(t *testing.T) { gateTry(t, kind.make(t, clockwork.NewFakeClockAt(gateEpoch))) })
			t.Run("Settle", func(t *testing.T) { gateSettle(t, kind.make(t, clockwork.NewFakeClockAt(gateEpoch))) })
			t.Run("FailFast", func(t *testing.T) {
				clk := clockwork.NewFakeClockAt(gateEpoch)
				gateFailFast(t, clk, kind.make(t, clk))
			})
			t.Run("Acquire", func(t *testing.T) {
				clk := clockwork.NewFakeClockAt(gateEpoch)
				gateAcquire(t, clk, kind.make(t, clk))
			})
			t.Run("CostCount", func(t *testing.T) { gateCostCount(t, kind.make(t, clockwork.NewFakeClockAt(gateEpoch))) })
			t.Run("Status", func(t *testing.T) {
				clk := clockwork.NewFakeClockAt(gateEpoch)
				gateStatus(t, clk, kind.make(t, clk))
			})
		})
	}
}

func gateTry(t *testing.T, g throttle.Gate) {
	p, ok, err := g.TryAcquirePermit(5, 100)
	if !ok || err != nil || p == nil {
		t.Fatalf("TryAcquirePermit(5, 100) = %v, %v, %v; want a permit", p, ok, err)
	}
	if got := p.Costs(); !slices.Equal(got, []int64{5, 100}) {
		t.Errorf("Costs() = %v, want [5 100]", got)
	}
	p, ok, err = g.TryAcquirePermit(1, 0)
	if ok || err != nil || p != nil {
		t.Errorf("TryAcquirePermit(1, 0) on empty limits = %v, %v, %v; want nil, false, nil", p, ok, err)
	}
	for _, c := range []struct {
		costs []int64
		want  time.Duration
	}{{[]int64{1, 0}, 200 * time.Millisecond}, {[]int64{0, 50}, 500 * time.Millisecond}, {[]int64{5, 10}, time.Second}} {
		if got, err := g.WaitTime(c.costs...); got != c.want || err != nil {
			t.Errorf("WaitTime(%v) = %v, %v; want %v", c.costs, got, err, c.want)
		}
	}
}

func gateSettle(t *testing.T, g throttle.Gate) {
	p, ok, err := g.TryAcquirePermit(5, 100)
	if !ok || err != nil {
		t.Fatalf("TryAcquirePermit(5, 100) = %v, %v", ok, err)
	}
	if err := p.Settle(2, 40); err != nil {
		t.Fatalf("Settle(2, 40): %v", err)
	}
	q, ok, _ := g.TryAcquirePermit(3, 60)
	if !ok {
		t.Fatal("the 3 requests and 60 tokens settled back were not there")
	}
	if _, ok, _ := g.TryAcquirePermit(1, 0); ok {
		t.Error("a request beyond what was settled back was granted")
	}
	if err := p.Settle(1, 1); !errors.Is(err, throttle.ErrSettled) {
		t.Errorf("second Settle: %v, want ErrSettled", err)
	}
	if err := p.Cancel(); !errors.Is(err, throttle.ErrSettled) {
		t.Errorf("Cancel after Settle: %v, want ErrSettled", err)
	}
	if err := q.Cancel(); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if _, ok, _ := g.TryAcquirePermit(3, 60); !ok {
		t.Error("Cancel did not give the 3 requests and 60 tokens back")
	}
}

func gateFailFast(t *testing.T, clk *clockwork.FakeClock, g throttle.Gate) {
	if _, ok, _ := g.TryAcquirePermit(5, 0); !ok {
		t.Fatal("TryAcquirePermit(5, 0) on full limits")
	}
	ctx, cancel := clockwork.WithTimeout(t.Context(), clk, 100*time.Millisecond)
	defer cancel()
	p, err := g.Acquire(ctx, 1, 0) // needs 200 ms
	var we *throttle.WaitError
	if p != nil || !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) || we.Wait != 200*time.Millisecond {
		t.Fatalf("Acquire past the deadline = %v, %v; want a *WaitError of 200ms", p, err)
	}
	clk.Advance(200 * time.Millisecond)
	if _, ok, _ := g.TryAcquirePermit(1, 0); !ok {
		t.Error("the refused Acquire took a token")
	}
}

func gateAcquire(t *testing.T, clk *clockwork.FakeClock, g throttle.Gate) {
	if _, ok, _ := g.TryAcquirePermit(5, 100); !ok {
		t.Fatal("TryAcquirePermit(5, 100) on full limits")
	}
	got := make(chan throttle.Permit, 1)
	go func() {
		p, err := g.Acquire(t.Context(), 1, 50)
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatalf("waiting for the queued Acquire's timer: %v", err)
	}
	clk.Advance(500*time.Millisecond - time.Nanosecond)
	select {
	case <-got:
		t.Fatal("Acquire(1, 50) returned before its tokens existed")
	default:
	}
	clk.Advance(time.Nanosecond)
	p := <-got
	if p == nil || !slices.Equal(p.Costs(), []int64{1, 50}) {
		t.Fatalf("Acquire(1, 50) gave %v", p)
	}
}

func gateStatus(t *testing.T, clk *clockwork.FakeClock, g throttle.Gate) {
	m, ok := g.(throttle.Meter)
	if !ok {
		t.Fatalf("%T is not a Meter", g)
	}
	if _, ok, _ := g.TryAcquirePermit(5, 40); !ok {
		t.Fatal("TryAcquirePermit(5, 40) on full limits")
	}
	clk.Advance(100 * time.Millisecond)
	prefix := []throttle.LimitStatus{{Name: "kept"}}
	got := m.Status(prefix)
	for i := range got {
		if l := got[i].Level; l != 0 && (l < float64(got[i].Remaining) || l >= float64(got[i].Remaining)+1) {
			t.Errorf("Status()[%d]: Level %v, Remaining %d", i, l, got[i].Remaining)
		}
		got[i].Level = 0 // a Gate may leave it 0
	}
	want := []throttle.LimitStatus{
		{Name: "kept"},
		{Name: "requests", Capacity: 5, Rate: throttle.Per(5, time.Second), Remaining: 0, Reset: 900 * time.Millisecond},
		{Name: "tokens", Capacity: 100, Rate: throttle.Per(100, time.Second), Remaining: 70, Reset: 300 * time.Millisecond},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Status() =\n%v\nwant\n%v", got, want)
	}
}

func gateCostCount(t *testing.T, g throttle.Gate) {
	if _, _, err := g.TryAcquirePermit(1); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Errorf("TryAcquirePermit(1): %v, want ErrInvalidCost", err)
	}
	if _, err := g.Acquire(t.Context(), 1, 1, 1); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Errorf("Acquire(1, 1, 1): %v, want ErrInvalidCost", err)
	}
	if _, err := g.WaitTime(1); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Errorf("WaitTime(1): %v, want ErrInvalidCost", err)
	}
}

var _ throttle.Gate = (*trtcm.Marker)(nil)

// TestMarkerGate: a Marker is a Gate that refuses where a bucket would
// wait. Committed 2 at 2 a second, peak 4 at 4 a second.
func TestMarkerGate(t *testing.T) {
	clk := clockwork.NewFakeClockAt(gateEpoch)
	m := must(trtcm.New(throttle.Per(2, time.Second), 2, throttle.Per(4, time.Second), 4, throttle.WithClock(clk), throttle.WithName("m")))
	if got, want := m.Limits(), []throttle.Limit{{Name: "m", Capacity: 2, Rate: throttle.Per(2, time.Second)}}; !slices.Equal(got, want) {
		t.Errorf("Limits() = %v, want %v", got, want)
	}
	green, ok, err := m.TryAcquirePermit(2)
	if !ok || err != nil {
		t.Fatalf("green TryAcquirePermit(2) = %v, %v", ok, err)
	}
	if _, ok, _ := m.TryAcquirePermit(1); ok {
		t.Error("TryAcquirePermit granted a yellow call")
	}
	if _, err := m.Acquire(t.Context(), 1); !errors.Is(err, trtcm.ErrYellow) {
		t.Errorf("yellow Acquire without best effort: %v, want ErrYellow", err)
	}
	best := trtcm.AllowBestEffort(t.Context())
	yellow, err := m.Acquire(best, 2) // the refusals above spent nothing: the peak still holds 2
	if err != nil {
		t.Fatalf("yellow Acquire with best effort: %v", err)
	}
	if _, err := m.Acquire(best, 1); !errors.Is(err, trtcm.ErrRed) {
		t.Errorf("Acquire above the peak: %v, want ErrRed", err)
	}
	// Green again needs 1 committed token (500 ms at 2/s) and 1 peak token
	// (250 ms at 4/s).
	if got, err := m.WaitTime(1); got != 500*time.Millisecond || err != nil {
		t.Errorf("WaitTime(1) = %v, %v; want 500ms", got, err)
	}
	if _, err := m.WaitTime(3); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
		t.Errorf("WaitTime(3) above the committed burst: %v", err)
	}
	// Cancelling the yellow call gives the peak its 2 back; settling the
	// green one at 1 gives 1 back to both buckets.
	if err := yellow.Cancel(); err != nil {
		t.Fatal(err)
	}
	if err := green.Settle(1); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := m.TryAcquirePermit(1); !ok {
		t.Error("the token settled back is not green")
	}
	if err := green.Cancel(); !errors.Is(err, throttle.ErrSettled) {
		t.Errorf("Cancel after Settle: %v, want ErrSettled", err)
	}
	if _, _, err := m.TryAcquirePermit(1, 1); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Errorf("two costs for one limit: %v, want ErrInvalidCost", err)
	}
}

// TestLimiterTaker: Take and TryAcquire take what Acquire and
// TryAcquirePermit would, in the same FIFO order, without a Permit; Refund
// gives it back as Cancel does; a grant at once allocates nothing.
func TestLimiterTaker(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Unix(0, 0))
	l := gateKinds[0].make(t, clk).(*throttle.Limiter)
	req, tok := l.Bucket("requests"), l.Bucket("tokens")
	ctx := context.Background()
	if waited, err := l.Take(ctx, 5, 50); err != nil || waited != 0 {
		t.Fatal(waited, err)
	}
	if req.Tokens() != 0 || tok.Tokens() != 50 {
		t.Fatalf("levels %v and %v after Take(5, 50), want 0 and 50", req.Tokens(), tok.Tokens())
	}
	// FIFO with Acquire: a Permit's call queued first is served first.
	first := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, 1, 10)
		first <- err
	}()
	clk.BlockUntilContext(ctx, 1)
	second := make(chan error, 1)
	var secondWaited time.Duration
	go func() {
		var err error
		secondWaited, err = l.Take(ctx, 1, 10)
		second <- err
	}()
	for deadline := time.Now().Add(20 * time.Second); throttle.QueuedFor(l) != 2; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for two calls queued")
		}
	}
	dl, cancel := clockwork.WithTimeout(ctx, clk, 300*time.Millisecond)
	defer cancel()
	var wait *throttle.WaitError
	if _, err := l.Take(dl, 1, 1); !errors.As(err, &wait) {
		t.Errorf("Take behind two calls with 300 ms left: %v, want a *WaitError", err)
	}
	clk.Advance(200 * time.Millisecond)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-second:
		t.Fatalf("Take served out of turn (%v)", err)
	default:
	}
	clk.Advance(200 * time.Millisecond)
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if secondWaited != 400*time.Millisecond {
		t.Errorf("Take queued from 0 to 400 ms reports a wait of %v", secondWaited)
	}
	if req.Tokens() != 0 || tok.Tokens() != 70 {
		t.Fatalf("levels %v and %v, want 0 and 70", req.Tokens(), tok.Tokens())
	}
	// Settle: a give-back as Cancel, capped at capacity; a charge at once,
	// into debt; wrong counts change nothing.
	if err := l.Settle([]int64{1, 10}, []int64{0, 0}); err != nil {
		t.Fatal(err)
	}
	if req.Tokens() != 1 || tok.Tokens() != 80 {
		t.Errorf("levels %v and %v after giving back 1 and 10, want 1 and 80", req.Tokens(), tok.Tokens())
	}
	if err := l.Settle([]int64{10, 100}, []int64{0, 0}); err != nil || req.Tokens() != 5 || tok.Tokens() != 100 {
		t.Errorf("giving back 10 and 100: %v, levels %v and %v, want 5 and 100 (the capacities)", err, req.Tokens(), tok.Tokens())
	}
	if err := l.Settle([]int64{0, 0}, []int64{7, 30}); err != nil || req.Tokens() != -2 || tok.Tokens() != 70 {
		t.Errorf("charging 7 and 30: %v, levels %v and %v, want -2 and 70", err, req.Tokens(), tok.Tokens())
	}
	if err := l.Settle([]int64{0, 0}, []int64{9, 0}); !errors.Is(err, throttle.ErrCostExceedsCapacity) || req.Tokens() != -5 {
		t.Errorf("charging 9 more, past one capacity of debt: %v, level %v, want ErrCostExceedsCapacity and -5", err, req.Tokens())
	}
	if err := l.Settle([]int64{10, 0}, []int64{0, 0}); err != nil || req.Tokens() != 5 {
		t.Fatalf("giving back 10: %v, level %v, want 5", err, req.Tokens())
	}
	if err := l.Settle([]int64{1}, []int64{0}); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Errorf("Settle of one value on two buckets: %v, want ErrInvalidCost", err)
	}
	if err := l.Settle([]int64{1, 0}, []int64{0, -1}); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Errorf("Settle with a negative value: %v, want ErrInvalidCost", err)
	}
	if ok, err := l.TryAcquire(5, 1); !ok || err != nil {
		t.Errorf("TryAcquire(5, 1) on a full limiter: %v, %v", ok, err)
	}
	if _, err := new(throttle.Limiter).Take(ctx, 1); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Errorf("Take on a zero Limiter: %v, want ErrInvalidCost", err)
	}

	big := must(throttle.New(1<<60, throttle.Per(1<<40, time.Second), throttle.WithClock(clk)))
	bl := must(throttle.NewLimiter(big))
	if n := testing.AllocsPerRun(1000, func() { _, _ = bl.Take(ctx, 1) }); n != 0 {
		t.Errorf("Take granted at once: %v allocations, want 0", n)
	}
}

// TestPauseUntilLevels: a pause given levels sets them, for when it ends:
// a bucket in debt is raised to its level, a level above capacity is cut
// to it, a negative value leaves its bucket as it was; nothing refills
// during the pause. Clock is the clock WithClock gave.
func TestPauseUntilLevels(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Unix(0, 0))
	mk := func(name string) *throttle.Bucket {
		b, err := throttle.New(10, throttle.Per(10, time.Second), throttle.WithClock(clk), throttle.WithName(name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := mk("a"), mk("b"), mk("c")
	l, err := throttle.NewLimiter(a, b, c)
	if err != nil {
		t.Fatal(err)
	}
	if l.Clock() != clk {
		t.Error("Clock is not the clock WithClock gave")
	}
	p, err := l.Acquire(context.Background(), 10, 10, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Settle(15, 10, 4); err != nil { // a 5 in debt
		t.Fatal(err)
	}
	l.PauseUntil(clk.Now().Add(time.Second), 2, 50, -1)
	clk.Advance(time.Second)
	for _, w := range []struct {
		b    *throttle.Bucket
		want float64
	}{{a, 2}, {b, 10}, {c, 6}} {
		if got := w.b.Status().Level; got != w.want {
			t.Errorf("bucket %s at %v after the pause, want %v", w.b.Status().Name, got, w.want)
		}
	}
}
