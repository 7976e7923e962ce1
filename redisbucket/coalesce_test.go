package redisbucket_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// A batch decides k acquisitions exactly as k fast-path calls at the same
// instant do: the same statuses, waits and levels, the same state written
// and the same expiry, on random limits, states and costs. Where the
// fast path would fall through to the general path, the batch says so
// ({-2}) and the client sends each acquisition alone.
func TestBatchMatchesSequential(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.be.Client()
	cur := redis.NewScript(redisbucket.ScriptSource)
	if r.be.Mini != nil {
		// No struct: every batch goes back to the client.
		v, err := cur.Run(ctx, c, []string{r.be.Prefix + "{m}"}, 10, 1, 1, 1, "", "", 1).Int64Slice()
		if err != nil || len(v) != 1 || v[0] != -2 {
			t.Fatalf("batch on miniredis: %v %v, want [-2]", v, err)
		}
		return
	}
	rng := rand.New(rand.NewPCG(5, 6))
	now := r.fc.Now().UnixMicro()
	total, fell := 0, 0
	for tr := range 100 {
		capacity := 1 + rng.Int64N(1000)
		if rng.IntN(4) == 0 {
			capacity = 1 + rng.Int64N(1<<40)
		}
		tokens := rng.Int64N(10_000)
		if rng.IntN(8) == 0 {
			tokens = 0
		}
		period := time.Duration(1+rng.Int64N(int64(10*time.Second))) / time.Microsecond * time.Microsecond
		rate := throttle.Per(tokens, max(period, time.Microsecond))
		sa, err := redisbucket.ShapeArgs(capacity, rate)
		if err != nil || sa[3] != "1" {
			continue
		}
		p := r.be.Prefix + strconv.Itoa(tr)
		kB, kS := p+"{batch}", p+"{seq}"
		var emission int64 = 1
		if tokens > 0 {
			emission = max(1, int64(rate.Period()/time.Microsecond)/max(1, tokens))
		}
		for step := range 40 {
			switch rng.IntN(3) {
			case 0:
				now += rng.Int64N(3 * emission)
			case 1:
				now += emission*int64(1+rng.IntN(4)) - 1 + rng.Int64N(3)
			}
			ts := strconv.FormatInt(now, 10)
			k := 2 + rng.IntN(6)
			costs := make([]int64, k)
			for i := range costs {
				costs[i] = 1 + rng.Int64N(min(capacity, 2+capacity/4))
			}
			// A view now and then, as a client that saw the bucket below
			// full sends: the batch gives the key back to the client when
			// it is missing.
			view := ""
			if rng.IntN(6) == 0 {
				view = strconv.FormatInt(now-1, 10) + " " + strconv.FormatInt(capacity/2, 10)
			}
			args := []any{sa[0], sa[1], sa[2], costs[0], view, ts}
			for _, x := range costs[1:] {
				args = append(args, x)
			}
			vb, err := cur.Run(ctx, c, []string{kB}, args...).Int64Slice()
			if err != nil {
				t.Fatal(err)
			}
			if len(vb) == 1 && vb[0] == -2 {
				exists, _ := c.Exists(ctx, kB).Result()
				if view == "" || exists == 1 {
					t.Fatalf("trace %d step %d: batch fell back with view %q, key exists %d", tr, step, view, exists)
				}
				// Do what the client does: each alone, on both keys.
				vb = []int64{now}
				for _, x := range costs {
					v, err := cur.Run(ctx, c, []string{kB}, sa[0], sa[1], sa[2], x, view, ts).Int64Slice()
					if err != nil {
						t.Fatal(err)
					}
					vb = append(vb, v[0], v[1], v[3])
				}
				fell++
			}
			if len(vb) != 1+3*k || vb[0] != now {
				t.Fatalf("trace %d step %d: batch of %d replied %v", tr, step, k, vb)
			}
			for i, x := range costs {
				vs, err := cur.Run(ctx, c, []string{kS}, sa[0], sa[1], sa[2], x, view, ts).Int64Slice()
				if err != nil {
					t.Fatal(err)
				}
				got := [3]int64{vb[1+3*i], vb[2+3*i], vb[3+3*i]}
				if want := [3]int64{vs[0], vs[1], vs[3]}; got != want {
					t.Fatalf("trace %d step %d: cap %d rate %v costs %v: decision %d is %v, alone %v (status, wait, tok)",
						tr, step, capacity, rate, costs, i, got, want)
				}
			}
			sb, _ := c.Get(ctx, kB).Result()
			ss, _ := c.Get(ctx, kS).Result()
			eb, _ := c.PExpireTime(ctx, kB).Result()
			es, _ := c.PExpireTime(ctx, kS).Result()
			if sb != ss || eb != es {
				t.Fatalf("trace %d step %d: batch wrote %q expiring %v, alone %q expiring %v", tr, step, sb, eb, ss, es)
			}
			total++
		}
	}
	t.Logf("%d random batches agree (%d sent back to the client)", total, fell)
}

// blockFirst is a go-redis hook that holds the first script call until
// release is closed.
type blockFirst struct {
	once    sync.Once
	entered chan struct{}
	release chan struct{}
	calls   chan int // the number of arguments of each script call
}

func (h *blockFirst) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *blockFirst) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *blockFirst) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.HasPrefix(cmd.Name(), "eval") {
			h.calls <- len(cmd.Args())
			h.once.Do(func() {
				close(h.entered)
				<-h.release
			})
		}
		return next(ctx, cmd)
	}
}

// Acquisitions that arrive while a call is in flight wait and go in one
// call when it ends, decided in arrival order as one at a time would be;
// one whose context ends while it waits leaves, and its cost is not spent.
func TestCoalescedTryAcquire(t *testing.T) {
	r := newRig(t)
	h := &blockFirst{entered: make(chan struct{}), release: make(chan struct{}), calls: make(chan int, 100)}
	c := redis.NewClient(&redis.Options{Addr: r.be.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	// Loaded first, so that no call meets NOSCRIPT and goes twice.
	if err := c.ScriptLoad(context.Background(), redisbucket.ScriptSource).Err(); err != nil {
		t.Fatal(err)
	}
	// FailClosed: no fleet registration, whose calls take the general path.
	b, err := redisbucket.New(c, "co", 6, throttle.Per(1, time.Hour), r.opts(redisbucket.WithFailurePolicy(redisbucket.FailClosed))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	// After New: its check of the server is no decision to hold.
	c.AddHook(h)
	redisbucket.SetBatchGap(b, time.Hour) // one call in flight: TestSeveralBatchesInFlight has more
	type out struct {
		i  int
		ok bool
	}
	res := make(chan out, 10)
	go func() {
		ok, err := b.TryAcquire(2)
		if err != nil {
			t.Error(err)
		}
		res <- out{0, ok}
	}()
	<-h.entered
	// Capacity 6: costs 2 (in flight), then 1, 2, 3 (refused: 1 left), 1, 1
	// (refused: 0 left).
	costs := []int64{2, 1, 2, 3, 1, 1}
	for i := 1; i < len(costs); i++ {
		go func() {
			ok, err := b.TryAcquire(costs[i])
			if err != nil {
				t.Error(err)
			}
			res <- out{i, ok}
		}()
		waitQueued(t, func() int64 { return redisbucket.BatchWaiting(b) }, int64(i))
	}
	// One more that gives up while it waits.
	cctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() {
		_, err := b.TryAcquireContext(cctx, 1)
		left <- err
	}()
	waitQueued(t, func() int64 { return redisbucket.BatchWaiting(b) }, int64(len(costs)))
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	close(h.release)
	want := []bool{true, true, true, false, true, false}
	for range costs {
		o := <-res
		if o.ok != want[o.i] {
			t.Errorf("acquisition %d (cost %d): granted %v, want %v", o.i, costs[o.i], o.ok, want[o.i])
		}
	}
	// One alone, one batch; on miniredis (no struct) the batch comes back
	// and its five go alone.
	calls := 2
	if r.be.Mini != nil {
		calls = 7
	}
	if n := len(h.calls); n != calls {
		t.Errorf("%d script calls, want %d", n, calls)
	}
	<-h.calls
	// evalsha, sha, 1, key, then 6 arguments and 4 more costs.
	if n := <-h.calls; n != 4+6+4 {
		t.Errorf("batch call had %d arguments, want %d", n, 4+6+4)
	}
	s := b.Stats()
	if s.Calls != int64(calls) || s.Decisions != int64(len(costs)) || s.Granted != 4 {
		t.Errorf("stats %+v: want %d calls, %d decisions, 4 granted", s, calls, len(costs))
	}
	if tok := b.Tokens(); tok != 0 {
		t.Errorf("tokens %v, want 0", tok)
	}
}

// A waiting acquisition is bound by its own call timeout, whatever the
// call it waits behind does: here that call hangs, and the waiter goes to
// the failure policy at its timeout.
func TestCoalescedWaiterTimesOut(t *testing.T) {
	r := newRig(t)
	h := &blockFirst{entered: make(chan struct{}), release: make(chan struct{}), calls: make(chan int, 100)}
	c := redis.NewClient(&redis.Options{Addr: r.be.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	r.allowFailures = true
	const timeout = 50 * time.Millisecond
	b, err := redisbucket.New(c, "cot", 6, throttle.Per(1, time.Hour),
		r.opts(redisbucket.WithFailurePolicy(redisbucket.FailClosed), redisbucket.WithCallTimeout(timeout))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	// After New: its check of the server is no decision to hold.
	c.AddHook(h)
	redisbucket.SetBatchGap(b, time.Hour) // the waiter waits behind the hung call
	first := make(chan struct{})
	go func() {
		defer close(first)
		_, _ = b.TryAcquire(1)
	}()
	<-h.entered
	start := time.Now()
	ok, err := b.TryAcquire(1)
	elapsed := time.Since(start)
	close(h.release)
	<-first
	if ok || err != nil {
		// The bucket is full: only FailClosed refuses.
		t.Fatalf("waiter behind a hung call: %v %v, want a refusal by FailClosed", ok, err)
	}
	// The bound is the timeout plus the shared deadline's window (1 ms)
	// plus 10 ms; the margin is for a loaded machine.
	if elapsed > timeout+time.Second {
		t.Fatalf("waiter returned after %v, call timeout %v", elapsed, timeout)
	}
	t.Logf("waiter returned after %v (call timeout %v)", elapsed, timeout)
}

// A batch that meets a state the fast path does not read (here a stored
// time ahead of the server's clock, which the general path keeps) is given
// back, and its acquisitions go one call each, each as it would alone.
func TestCoalescedFallsBackAlone(t *testing.T) {
	r := newRig(t)
	if r.be.Mini != nil {
		t.Skip("miniredis has no struct: every batch falls back (TestCoalescedTryAcquire)")
	}
	ctx := context.Background()
	h := &blockFirst{entered: make(chan struct{}), release: make(chan struct{}), calls: make(chan int, 100)}
	c := redis.NewClient(&redis.Options{Addr: r.be.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	if err := c.ScriptLoad(ctx, redisbucket.ScriptSource).Err(); err != nil {
		t.Fatal(err)
	}
	rate := throttle.Per(1, time.Hour)
	b, err := redisbucket.New(c, "cof", 6, rate, r.opts(redisbucket.WithFailurePolicy(redisbucket.FailClosed))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	// After New: its check of the server is no decision to hold.
	c.AddHook(h)
	redisbucket.SetBatchGap(b, time.Hour)
	sa, err := redisbucket.ShapeArgs(6, rate)
	if err != nil {
		t.Fatal(err)
	}
	den, _ := strconv.ParseFloat(sa[2], 64)
	ahead := float64(r.fc.Now().Add(10 * time.Second).UnixMicro())
	if err := c.Set(ctx, b.Key(), packState(ahead, 4, 0, den), 0).Err(); err != nil {
		t.Fatal(err)
	}
	first := make(chan bool, 1)
	go func() {
		ok, _ := b.TryAcquire(1)
		first <- ok
	}()
	<-h.entered
	costs := []int64{2, 2, 1} // 3 left after the first: 2 granted, 2 refused, 1 granted
	want := []bool{true, false, true}
	type out struct {
		i  int
		ok bool
	}
	res := make(chan out, len(costs))
	for i, cost := range costs {
		go func() {
			ok, err := b.TryAcquire(cost)
			if err != nil {
				t.Error(err)
			}
			res <- out{i, ok}
		}()
		waitQueued(t, func() int64 { return redisbucket.BatchWaiting(b) }, int64(i+1))
	}
	close(h.release)
	if !<-first {
		t.Error("the first call was refused")
	}
	for range costs {
		o := <-res
		if o.ok != want[o.i] {
			t.Errorf("acquisition %d (cost %d): granted %v, want %v", o.i, costs[o.i], o.ok, want[o.i])
		}
	}
	// One alone, the batch given back, then its three one call each.
	if s := b.Stats(); s.Calls != 5 || s.Granted != 3 {
		t.Errorf("stats %+v: want 5 calls, 3 granted", s)
	}
	if tok := b.Tokens(); tok != 0 {
		t.Errorf("tokens %v, want 0", tok)
	}
}
