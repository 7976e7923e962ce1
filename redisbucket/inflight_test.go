package redisbucket_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// gate is a go-redis hook that holds each script call before it is sent,
// while hold is set, until the test releases it: the test chooses the
// order in which calls in flight reach the server.
type gate struct {
	mu      sync.Mutex
	hold    bool
	held    []chan struct{}
	arrived chan int // the number of arguments of each script call, as it arrives
}

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }
func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !strings.HasPrefix(cmd.Name(), "eval") {
			return next(ctx, cmd)
		}
		g.mu.Lock()
		var ch chan struct{}
		if g.hold {
			ch = make(chan struct{})
			g.held = append(g.held, ch)
		}
		g.mu.Unlock()
		g.arrived <- len(cmd.Args())
		if ch != nil {
			<-ch
		}
		return next(ctx, cmd)
	}
}

// release lets the i-th held call (in order of arrival) go to the server.
func (g *gate) release(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.held[i])
}

// open stops holding calls and releases those not yet released.
func (g *gate) open(released map[int]bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold = false
	for i, ch := range g.held {
		if !released[i] {
			close(ch)
		}
	}
}

// Several calls are in flight at once, up to half the client's pool, and
// the server decides them in the order it receives them: each decision is
// exact (as if alone at its server instant), arrival order holds within a
// batch, not between calls in flight on different connections. Here A, B,
// C and D leave at once, one call each (the bound, pool 8: 4 in flight);
// E, F and G gather and leave as one batch when the first call returns.
// The test lets the calls reach the server as D, C, B, A, then the batch:
// D, C and B are granted and A, which arrived first, is refused; in the
// batch E is granted and F and G refused, in their order; 4 granted in all,
// the capacity.
func TestSeveralBatchesInFlight(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	g := &gate{hold: true, arrived: make(chan int, 100)}
	c := redis.NewClient(&redis.Options{Addr: r.be.Addr, PoolSize: 8, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	if err := c.ScriptLoad(ctx, redisbucket.ScriptSource).Err(); err != nil {
		t.Fatal(err)
	}
	b, err := redisbucket.New(c, "inflight", 4, throttle.Per(1, time.Hour), r.opts(redisbucket.WithFailurePolicy(redisbucket.FailClosed))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	// After New: its check of the server is no decision to hold.
	c.AddHook(g)
	redisbucket.SetBatchGap(b, 0)
	type out struct {
		name string
		ok   bool
	}
	res := make(chan out, 10)
	try := func(name string, cost int64) {
		go func() {
			ok, err := b.TryAcquire(cost)
			if err != nil {
				t.Error(err)
			}
			res <- out{name, ok}
		}()
	}
	// A, B, C, D: each a call of its own, in flight at once.
	alone := []struct {
		name string
		cost int64
	}{{"A", 2}, {"B", 1}, {"C", 1}, {"D", 1}}
	// evalsha, sha, 1, key, capacity, num, den, cost, view, and on a real
	// server the rig's time.
	single := 4 + 5
	if r.be.Real() {
		single++
	}
	for _, a := range alone {
		try(a.name, a.cost)
		if n := <-g.arrived; n != single {
			t.Fatalf("%s: a call of %d arguments, want %d (alone)", a.name, n, single)
		}
	}
	if n, bound := redisbucket.BatchInFlight(b); n != 4 || bound != 4 {
		t.Fatalf("%d calls in flight, bound %d; want 4 and 4 (half the pool)", n, bound)
	}
	// E, F, G: the bound is reached, they gather.
	for i, x := range []struct {
		name string
		cost int64
	}{{"E", 1}, {"F", 2}, {"G", 1}} {
		try(x.name, x.cost)
		waitQueued(t, func() int64 { return redisbucket.BatchWaiting(b) }, int64(i+1))
	}
	got := map[string]bool{}
	wait := func(name string) {
		t.Helper()
		o := <-res
		if o.name != name {
			t.Fatalf("%s returned, want %s", o.name, name)
		}
		got[o.name] = o.ok
	}
	released := map[int]bool{}
	// D first: its return sends the batch, held in turn.
	g.release(3)
	released[3] = true
	wait("D")
	if n := <-g.arrived; n != 4+6+2 {
		t.Fatalf("batch call of %d arguments, want %d", n, 4+6+2)
	}
	for _, i := range []int{2, 1, 0} {
		g.release(i)
		released[i] = true
		wait(alone[i].name)
	}
	// The batch (on miniredis, which has no struct, given back and sent as
	// three calls in order).
	g.open(released)
	for range 3 {
		o := <-res
		got[o.name] = o.ok
	}
	want := map[string]bool{"D": true, "C": true, "B": true, "A": false, "E": true, "F": false, "G": false}
	for name, ok := range want {
		if got[name] != ok {
			t.Errorf("%s granted %v, want %v (server order D, C, B, A, then E, F, G)", name, got[name], ok)
		}
	}
	calls := int64(5)
	if r.be.Mini != nil {
		calls = 8
	}
	if s := b.Stats(); s.Calls != calls || s.Granted != 4 || s.Decisions != 7 {
		t.Errorf("stats %+v: want %d calls, 7 decisions, 4 granted (the capacity)", s, calls)
	}
	if tok := b.Tokens(); tok != 0 {
		t.Errorf("tokens %v, want 0", tok)
	}
	// The batch's sender ends its call after it hands out the replies.
	waitQueued(t, func() int64 {
		n, _ := redisbucket.BatchInFlight(b)
		return int64(-n)
	}, 0)
}

// slowCalls is a go-redis hook that holds every script call for d before
// sending it, as a longer round trip would, and records the most calls
// held at once.
type slowCalls struct {
	d         time.Duration
	mu        sync.Mutex
	now, peak int
}

func (h *slowCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *slowCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *slowCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !strings.HasPrefix(cmd.Name(), "eval") {
			return next(ctx, cmd)
		}
		h.mu.Lock()
		h.now++
		h.peak = max(h.peak, h.now)
		h.mu.Unlock()
		time.Sleep(h.d)
		err := next(ctx, cmd)
		h.mu.Lock()
		h.now--
		h.mu.Unlock()
		return err
	}
}

// With round trips of a millisecond and more, the bound on calls in
// flight rises from 1 to half the pool once the first calls have
// returned, and concurrent acquisitions go in calls of their own at once
// rather than queueing behind the call in flight; the decisions stay
// exact (capacity 20, no refill to speak of: 20 granted of 64).
func TestInFlightFollowsTheRoundTrip(t *testing.T) {
	r := newRig(t)
	h := &slowCalls{d: time.Millisecond}
	c := redis.NewClient(&redis.Options{Addr: r.be.Addr, PoolSize: 16, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	if err := c.ScriptLoad(context.Background(), redisbucket.ScriptSource).Err(); err != nil {
		t.Fatal(err)
	}
	b, err := redisbucket.New(c, "rtt", 20, throttle.Per(1, time.Hour), r.opts(redisbucket.WithFailurePolicy(redisbucket.FailClosed))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	// After New: its check of the server is no decision to hold.
	c.AddHook(h)
	if n := redisbucket.BatchBound(b); n != 1 {
		t.Fatalf("bound %d before any call, want 1", n)
	}
	if ok, err := b.TryAcquire(1); !ok || err != nil {
		t.Fatalf("TryAcquire = %v, %v", ok, err)
	}
	if n := redisbucket.BatchBound(b); n != 8 {
		t.Fatalf("bound %d after a call of a millisecond or more, want 8 (half the pool)", n)
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 8 {
				ok, err := b.TryAcquire(1)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if g := granted.Load(); g != 19 {
		t.Errorf("%d granted of 64 after the first, want 19 (capacity 20)", g)
	}
	h.mu.Lock()
	peak := h.peak
	h.mu.Unlock()
	if peak < 2 {
		t.Errorf("at most %d call in flight, want several", peak)
	}
	t.Logf("at most %d calls in flight; %+v", peak, b.Stats())
}
