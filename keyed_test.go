package throttle

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle/internal/exact"
)

// oneLimit configures every key with 10 tokens refilled at 10 a second.
func oneLimit(int) []Limit {
	return []Limit{{Name: "req", Capacity: 10, Rate: Per(10, time.Second)}}
}

func newKeyedFake(t testing.TB, config func(int) []Limit) (*Keyed[int], *clockwork.FakeClock) {
	t.Helper()
	clk := clockwork.NewFakeClockAt(t0)
	return NewKeyed(config, WithClock(clk)), clk
}

// heldKeys counts the keys that have a real Limiter.
func heldKeys[K comparable](k *Keyed[K]) int { return k.heldCount() }

// perShard returns one key for each shard of k, drawn from key(0), key(1)...
func perShard[K comparable](k *Keyed[K], key func(int) K) []K {
	var keys []K
	seen := map[*shard[K]]bool{}
	for i := 0; len(keys) < numShards; i++ {
		if s, _ := k.shard(key(i)); !seen[s] {
			seen[s] = true
			keys = append(keys, key(i))
		}
	}
	return keys
}

// drive makes WaitTime calls on keys that are not held, one for each shard
// in turn, which sweep without adding keys, until no more than want keys
// are held or it has made limit calls, and returns how many it made.
func drive[K comparable](t testing.TB, k *Keyed[K], key func(int) K, want, limit int) int {
	t.Helper()
	keys := perShard(k, key)
	for i := 0; ; i++ {
		if i%numShards == 0 && k.Len() <= want || i == limit {
			return i
		}
		k.WaitTime(keys[i%numShards], 1)
	}
}

func TestKeyedTryAcquirePerKey(t *testing.T) {
	k, clk := newKeyedFake(t, oneLimit)
	for range 10 {
		if ok, err := k.TryAcquire(1, 1); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if ok, _ := k.TryAcquire(1, 1); ok {
		t.Fatal("key 1 went past its capacity")
	}
	if ok, _ := k.TryAcquire(2, 10); !ok {
		t.Fatal("key 2 was charged for key 1")
	}
	if d, err := k.WaitTime(1, 3); d != 300*time.Millisecond || err != nil {
		t.Fatalf("WaitTime = %v, %v", d, err)
	}
	clk.Advance(300*time.Millisecond - 1)
	if ok, _ := k.TryAcquire(1, 3); ok {
		t.Fatal("granted a nanosecond early")
	}
	clk.Advance(1)
	if ok, _ := k.TryAcquire(1, 3); !ok {
		t.Fatal("refused on time")
	}
	if n := k.Len(); n != 2 {
		t.Fatalf("Len = %d", n)
	}
	if d, err := k.WaitTime(99, 10); d != 0 || err != nil || k.Len() != 2 {
		t.Fatalf("WaitTime of a new key = %v, %v, and it made the key: %d", d, err, k.Len())
	}
}

func TestKeyedErrors(t *testing.T) {
	k, _ := newKeyedFake(t, func(key int) []Limit {
		switch key {
		case 0:
			return nil
		case 1:
			return []Limit{{Name: "req", Capacity: 1, Rate: Per(1, time.Second)}, {Name: "tok", Capacity: -1, Rate: Per(1, time.Second)}}
		}
		return []Limit{{Name: "req", Capacity: 3, Rate: Per(1, time.Second)}, {Name: "tok", Capacity: 100, Rate: Per(1, time.Second)}}
	})
	_, err := k.TryAcquire(1, 1, 1)
	_, newErr := New(-1, Per(1, time.Second))
	if !errors.Is(err, ErrInvalidOption) || !contains(err.Error(), `"tok"`) || !contains(err.Error(), newErr.Error()) {
		t.Fatalf("invalid config: %v", err)
	}
	if _, err := k.WaitTime(0, 1); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("empty config: %v", err)
	}
	if _, err := k.Acquire(t.Context(), 0, 1); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("empty config: %v", err)
	}
	if l := k.Limiter(1); l != nil {
		t.Fatal("Limiter of an invalid key is not nil")
	}
	if _, err := k.TryAcquire(2, 1, 101); !errors.Is(err, ErrCostExceedsCapacity) || !contains(err.Error(), `"tok"`) {
		t.Fatalf("cost above capacity: %v", err)
	}
	if _, err := k.TryAcquire(2, 1); !errors.Is(err, ErrInvalidCost) {
		t.Fatalf("too few costs: %v", err)
	}
	if _, err := k.Acquire(t.Context(), 2, 0, 0); !errors.Is(err, ErrInvalidCost) {
		t.Fatalf("no positive cost: %v", err)
	}
	if _, err := k.WaitTime(3, -1, 1); !errors.Is(err, ErrInvalidCost) || !contains(err.Error(), `"req"`) {
		t.Fatalf("negative cost: %v", err)
	}
	if n := k.Len(); n != 0 {
		t.Fatalf("failed calls left %d keys behind", n)
	}
	if heldKeys(k) != 0 {
		t.Fatal("a failed Acquire made a Limiter")
	}
}

func TestKeyedDropsIdleFullKeys(t *testing.T) {
	k, clk := newKeyedFake(t, oneLimit) // refills from empty in 1s
	for key := range 1000 {
		k.TryAcquire(key, 1)
	}
	if n := k.Len(); n != 1000 {
		t.Fatalf("Len = %d", n)
	}
	other := func(i int) int { return 1000 + i }
	// Not yet refilled: nothing may go, however often the sweep passes.
	clk.Advance(100*time.Millisecond - 1)
	drive(t, k, other, 0, 100_000)
	if n := k.Sweep(); n != 0 || k.Len() != 1000 {
		t.Fatalf("dropped %d keys before they refilled", 1000-k.Len())
	}
	// Refilled, but used less than a refill time ago: the lazy sweep keeps
	// them, an explicit Sweep does not.
	clk.Advance(1)
	drive(t, k, other, 0, 100_000)
	if n := k.Len(); n != 1000 {
		t.Fatalf("the lazy sweep dropped %d keys in use", 1000-n)
	}
	for key := range 10 {
		k.WaitTime(key, 1) // used again at 100ms
	}
	clk.Advance(900 * time.Millisecond)
	calls := drive(t, k, other, 10, 100_000)
	t.Logf("%d calls on other keys dropped 990 idle keys", calls)
	if calls > 1000 {
		t.Fatalf("took %d calls: the sweep is slower than promised", calls)
	}
	for key := range 10 {
		if s, tag := k.shard(key); s.locate(key, tag) < 0 {
			t.Fatalf("key %d, used at 100ms, was dropped at 1s", key)
		}
	}
	if n := k.Sweep(); n != 10 || k.Len() != 0 {
		t.Fatalf("Sweep dropped %d keys, %d left", n, k.Len())
	}
}

// TestKeyedHotKeysStay checks that keys in steady use are not dropped and
// made again between uses, though they are full whenever the sweep looks.
func TestKeyedHotKeysStay(t *testing.T) {
	made := 0
	k, clk := newKeyedFake(t, func(int) []Limit {
		made++
		return []Limit{{Name: "req", Capacity: 100, Rate: Per(100, time.Second)}}
	})
	const hot = 1000
	for range 50 {
		for key := range hot {
			if ok, _ := k.TryAcquire(key, 1); !ok {
				t.Fatal("refused")
			}
			clk.Advance(100 * time.Microsecond) // each key used every 100ms
		}
	}
	if made != hot {
		t.Fatalf("config called %d times for %d hot keys", made, hot)
	}
}

func TestKeyedMatchesNonEvicting(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { keyedProperty(t, seed, 4000) })
	}
}

// propConfig gives keys a mix of shapes: one limit, two joined limits with
// awkward rates, a limit that never refills, a tiny one, invalid configs.
func propConfig(key int) []Limit {
	switch key % 6 {
	case 0:
		return []Limit{{Name: "req", Capacity: 3, Rate: Per(3, time.Second)}}
	case 1:
		return []Limit{{Name: "req", Capacity: 5, Rate: Per(1, 300*time.Millisecond)}, {Name: "tok", Capacity: 100, Rate: Per(70, 700*time.Millisecond+3)}}
	case 2:
		return []Limit{{Name: "once", Capacity: 7, Rate: Per(0, time.Second)}}
	case 3:
		return []Limit{{Name: "tiny", Capacity: 1, Rate: Per(1, 7)}}
	case 4:
		if key%12 == 4 {
			return []Limit{{Name: "bad", Capacity: -1, Rate: Per(1, time.Second)}}
		}
		return []Limit{{Name: "a", Capacity: 10, Rate: Per(10, 10*time.Millisecond)}, {Name: "b", Capacity: 4, Rate: Per(3, 29*time.Millisecond)}, {Name: "c", Capacity: 1000, Rate: Per(999, time.Second)}}
	}
	return []Limit{{Name: "hour", Capacity: 50, Rate: Per(50, time.Hour)}}
}

type permitPair struct {
	key       int
	got, want Permit
}

// keyedProperty drives a Keyed, which drops keys, and a map of Limiters
// that never drops one, with the same random calls and times, and requires
// every answer to be the same.
func keyedProperty(t *testing.T, seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, 99))
	clk := clockwork.NewFakeClockAt(t0)
	var got, want eventLog
	k := NewKeyed(propConfig, WithClock(clk), WithObserver(&got))
	ref := map[int]*Limiter{}
	refFor := func(key int) (*Limiter, error) {
		if l, ok := ref[key]; ok {
			return l, nil
		}
		var bs []*Bucket
		for _, lim := range propConfig(key) {
			b, err := New(lim.Capacity, lim.Rate, WithClock(clk), WithName(lim.Name), WithObserver(&want))
			if err != nil {
				return nil, err
			}
			bs = append(bs, b)
		}
		l, err := NewLimiter(bs...)
		if err != nil {
			t.Fatal(err)
		}
		ref[key] = l
		return l, nil
	}
	costsFor := func(key int) []int64 {
		limits := propConfig(key)
		n := len(limits)
		if rng.IntN(40) == 0 {
			n += rng.IntN(3) - 1 // a wrong count now and then
		}
		costs := make([]int64, max(n, 0))
		for i := range costs {
			capa := int64(3)
			if i < len(limits) {
				capa = max(limits[i].Capacity, 1)
			}
			switch r := rng.IntN(30); {
			case r == 0:
				costs[i] = -1
			case r == 1:
				costs[i] = capa + 1
			case r < 6:
				costs[i] = 0
			default:
				costs[i] = 1 + rng.Int64N(min(capa, 1+capa/3))
			}
		}
		return costs
	}
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	var permits []permitPair
	maxLen, drops, heldDrops, lastHeld := 0, 0, 0, 0
	keys := 48 + rng.IntN(100)
	for op := range ops {
		key := rng.IntN(keys)
		rl, refErr := refFor(key)
		if refErr != nil {
			// Every call on the key must fail, and leave nothing behind.
			costs := costsFor(key)
			_, err := k.TryAcquire(key, costs...)
			if !errors.Is(err, ErrInvalidOption) || !contains(err.Error(), refErr.Error()) {
				t.Fatalf("op %d: key %d: err %v, New said %v", op, key, err, refErr)
			}
			continue
		}
		before := k.Len()
		switch r := rng.IntN(100); {
		case r < 40:
			costs := costsFor(key)
			got, gerr := k.TryAcquire(key, costs...)
			want, werr := rl.TryAcquire(costs...)
			if got != want || errText(gerr) != errText(werr) {
				t.Fatalf("op %d: TryAcquire(%d, %v) = %v, %v; want %v, %v", op, key, costs, got, gerr, want, werr)
			}
		case r < 60:
			costs := costsFor(key)
			got, gerr := k.WaitTime(key, costs...)
			want, werr := rl.WaitTime(costs...)
			if got != want || errText(gerr) != errText(werr) {
				t.Fatalf("op %d: WaitTime(%d, %v) = %v, %v; want %v, %v", op, key, costs, got, gerr, want, werr)
			}
		case r < 68:
			// Acquire only what is granted at once, or on a dead context,
			// so that the run stays on one goroutine.
			costs := costsFor(key)
			ctx := t.Context()
			d, err := rl.WaitTime(costs...)
			if kd, kerr := k.WaitTime(key, costs...); kd != d || errText(kerr) != errText(err) {
				t.Fatalf("op %d: WaitTime(%d, %v) = %v, %v; want %v, %v", op, key, costs, kd, kerr, d, err)
			}
			if err == nil && d > 0 {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			got, gerr := k.Acquire(ctx, key, costs...)
			want, werr := rl.Acquire(ctx, costs...)
			if (got == nil) != (want == nil) || errText(gerr) != errText(werr) {
				t.Fatalf("op %d: Acquire(%d, %v) = %v, %v; want %v, %v", op, key, costs, got, gerr, want, werr)
			}
			if got != nil {
				permits = append(permits, permitPair{key, got, want})
			}
		case r < 76 && len(permits) > 0:
			i := rng.IntN(len(permits))
			p := permits[i]
			actual := p.want.Costs()
			for j := range actual {
				actual[j] = rng.Int64N(2*actual[j] + 2)
			}
			var gerr, werr error
			if rng.IntN(4) == 0 {
				gerr, werr = p.got.Cancel(), p.want.Cancel()
			} else {
				gerr, werr = p.got.Settle(actual...), p.want.Settle(actual...)
			}
			if errText(gerr) != errText(werr) {
				t.Fatalf("op %d: settling key %d: %v; want %v", op, p.key, gerr, werr)
			}
			if rng.IntN(3) > 0 {
				permits = append(permits[:i], permits[i+1:]...)
			}
		case r < 79 && len(permits) > 0:
			// Forget a permit unsettled: it is garbage from now on.
			i := rng.IntN(len(permits))
			permits = append(permits[:i], permits[i+1:]...)
		case r < 82:
			until := clk.Now().Add(time.Duration(rng.Int64N(int64(2 * time.Second))))
			k.Limiter(key).PauseUntil(until)
			rl.PauseUntil(until)
		case r < 85:
			l := k.Limiter(key)
			i := rng.IntN(len(rl.bs))
			n := rng.Int64N(rl.bs[i].Cap + 1)
			l.bs[i].Drain(n)
			rl.bs[i].Drain(n)
			runtime.KeepAlive(l)
		case r < 86:
			k.Sweep()
		case r < 88:
			runtime.GC() // lets go of Limiters and Permits nobody holds
		default:
			var d time.Duration
			switch rng.IntN(4) {
			case 0:
				d = time.Duration(rng.IntN(10))
			case 1:
				d = time.Duration(rng.Int64N(int64(100 * time.Millisecond)))
			case 2:
				d = time.Duration(rng.Int64N(int64(2 * time.Second)))
			default:
				d = 0
			}
			clk.Advance(d)
		}
		n, h := k.Len(), heldKeys(k)
		maxLen = max(maxLen, n)
		if n < before {
			drops += before - n
		}
		if h < lastHeld && n < before {
			heldDrops++
		}
		lastHeld = h
		if !slices.Equal(got.events, want.events) {
			t.Fatalf("op %d: key %d: events %+v, want %+v", op, key, got.events, want.events)
		}
		got.events, want.events = got.events[:0], want.events[:0]
	}
	t.Logf("keys %d, most held %d, %d drops, %d of keys with a Limiter, %d permits open", keys, maxLen, drops, heldDrops, len(permits))
	if drops < ops/40 || heldDrops == 0 {
		t.Fatalf("too few drops to test anything: %d, %d of them with a Limiter", drops, heldDrops)
	}
}

// eventLog keeps the events it is given, on the test's goroutine.
// eventLog keeps events with their explanations by value, so that the
// events of two limiters compare with ==, explanations included.
type eventLog struct{ events []loggedEvent }

type loggedEvent struct {
	Event
	why WaitError
}

func (r *eventLog) Observe(e Event) {
	l := loggedEvent{Event: e}
	if e.Why != nil {
		l.why = *e.Why
		l.Event.Why = nil
	}
	r.events = append(r.events, l)
}

// kstart runs Acquire(ctx, key, cost) in a goroutine and waits until it is
// queued behind the key's earlier waiters, or returned.
func kstart(t *testing.T, k *Keyed[int], key int, clk *clockwork.FakeClock, ctx context.Context, id int, cost int64, out chan<- result, wg *sync.WaitGroup) {
	t.Helper()
	l := k.Limiter(key)
	before := l.bs[0].queued()
	wg.Add(1)
	returned := make(chan struct{})
	go func() {
		defer wg.Done()
		p, err := k.Acquire(ctx, key, cost)
		if (p == nil) == (err == nil) {
			t.Errorf("Acquire = %v, %v", p, err)
		}
		out <- result{id: id, err: err, at: clk.Since(t0)}
		close(returned)
	}()
	awaitQueued(t, l.bs[0], before, returned)
}

func TestKeyedAcquireFIFOPerKey(t *testing.T) {
	k, clk := newKeyedFake(t, func(int) []Limit {
		return []Limit{{Name: "req", Capacity: 5, Rate: Per(1, time.Second)}}
	})
	k.TryAcquire(1, 5)
	out := make(chan result, 10)
	var wg sync.WaitGroup
	kstart(t, k, 1, clk, t.Context(), 0, 5, out, &wg) // heavy request first
	for i := 1; i <= 3; i++ {
		kstart(t, k, 1, clk, t.Context(), i, 1, out, &wg)
	}
	// Another key is not held up by key 1's queue.
	if p, err := k.Acquire(t.Context(), 2, 5); p == nil || err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= 4; s++ {
		clk.BlockUntilContext(t.Context(), 1)
		clk.Advance(time.Second)
		if ok, _ := k.TryAcquire(1, 1); ok {
			t.Fatalf("TryAcquire jumped key 1's queue at %ds", s)
		}
	}
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(time.Second)
	if r := <-out; r.id != 0 || r.at != 5*time.Second || r.err != nil {
		t.Fatalf("first out: %+v", r)
	}
	for i := 1; i <= 3; i++ {
		clk.BlockUntilContext(t.Context(), 1)
		clk.Advance(time.Second)
		if r := <-out; r.id != i || r.at != time.Duration(5+i)*time.Second || r.err != nil {
			t.Fatalf("out %d: %+v", i, r)
		}
	}
	wg.Wait()
}

func TestKeyedCancelledWaiterSpendsNothing(t *testing.T) {
	k, clk := newKeyedFake(t, func(int) []Limit {
		return []Limit{{Name: "req", Capacity: 4, Rate: Per(1, time.Second)}}
	})
	k.TryAcquire(7, 4)
	out := make(chan result, 2)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(t.Context())
	kstart(t, k, 7, clk, ctx, 0, 4, out, &wg)
	kstart(t, k, 7, clk, t.Context(), 1, 2, out, &wg)
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(time.Second)
	cancel()
	if r := <-out; r.id != 0 || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("got %+v", r)
	}
	// The cost-2 waiter is now first: it is served at 2s, off the level the
	// cancelled waiter did not spend.
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(time.Second)
	if r := <-out; r.id != 1 || r.at != 2*time.Second || r.err != nil {
		t.Fatalf("got %+v", r)
	}
	wg.Wait()
	if d, _ := k.WaitTime(7, 4); d != 4*time.Second {
		t.Fatalf("WaitTime = %v: the cancelled waiter spent something", d)
	}
}

func TestKeyedAcquireDeadlineTooShort(t *testing.T) {
	k, clk := newKeyedFake(t, oneLimit)
	k.TryAcquire(3, 10)
	ctx, cancel := clockwork.WithTimeout(t.Context(), clk, 500*time.Millisecond)
	defer cancel()
	_, err := k.Acquire(ctx, 3, 6)
	var we *WaitError
	if !errors.As(err, &we) || we.Wait != 600*time.Millisecond || we.Limit != "req" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if d, _ := k.WaitTime(3, 10); d != time.Second {
		t.Fatalf("a failed Acquire spent: wait %v", d)
	}
}

// TestKeyedLimiterKeptWhileReachable checks that the key's Limiter, and
// what was done through it, lasts as long as the caller holds it.
func TestKeyedLimiterKeptWhileReachable(t *testing.T) {
	k, clk := newKeyedFake(t, oneLimit)
	l := k.Limiter(5)
	if l2 := k.Limiter(5); l2.Bucket("req") != l.Bucket("req") {
		t.Fatal("a second Limiter for a held key has other buckets")
	}
	l.Bucket("req").SetRate(Per(1, time.Second))
	clk.Advance(time.Hour)
	runtime.GC()
	if n := k.Sweep(); n != 0 {
		t.Fatalf("Sweep dropped %d keys with a live Limiter", n)
	}
	k.TryAcquire(5, 10)
	if d, _ := k.WaitTime(5, 1); d != time.Second {
		t.Fatalf("the rate set through the Limiter was lost: wait %v", d)
	}
	// Paused, the key is held even with no Limiter reachable.
	l.PauseUntil(clk.Now().Add(time.Hour))
	runtime.KeepAlive(l)
	l = nil
	clk.Advance(20 * time.Second) // full again, but paused
	runtime.GC()
	if n := k.Sweep(); n != 0 {
		t.Fatal("Sweep dropped a paused key")
	}
	if ok, _ := k.TryAcquire(5, 1); ok {
		t.Fatal("granted during the pause")
	}
	clk.Advance(time.Hour)
	runtime.GC()
	if n := k.Sweep(); n != 1 || k.Len() != 0 {
		t.Fatalf("Sweep dropped %d, %d held", n, k.Len())
	}
	// Made afresh from config: the rate is the configured one again.
	k.TryAcquire(5, 10)
	if d, _ := k.WaitTime(5, 1); d != 100*time.Millisecond {
		t.Fatalf("wait %v after the key was made again", d)
	}
}

// TestKeyedPermitHoldsKey checks that a Permit keeps its key until it is
// unreachable, so that settling it later charges the key's buckets.
func TestKeyedPermitHoldsKey(t *testing.T) {
	k, clk := newKeyedFake(t, oneLimit)
	p, err := k.Acquire(t.Context(), 8, 2)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour) // refilled long ago
	runtime.GC()
	if n := k.Sweep(); n != 0 {
		t.Fatal("Sweep dropped a key with a Permit outstanding")
	}
	if err := p.Settle(12); err != nil { // 10 more than reserved
		t.Fatal(err)
	}
	if d, _ := k.WaitTime(8, 10); d != time.Second {
		t.Fatalf("the charge was lost: wait %v", d)
	}
	runtime.KeepAlive(p)
	p = nil
	clk.Advance(time.Second)
	runtime.GC()
	if n := k.Sweep(); n != 1 {
		t.Fatalf("Sweep dropped %d keys once the permit was garbage", n)
	}
}

func TestKeyedConcurrent(t *testing.T) {
	// Real clock, many goroutines, every entry point: for the race detector
	// and for the invariant that a key never grants more than it has.
	const capacity = 20
	k := NewKeyed(func(key int) []Limit {
		return []Limit{{Name: "req", Capacity: capacity, Rate: Per(1, time.Hour)}}
	})
	const keys, workers = 50, 8
	var granted [keys]int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range 3000 {
				key := rng.IntN(keys)
				var ok bool
				switch rng.IntN(6) {
				case 0:
					ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
					p, err := k.Acquire(ctx, key, 1)
					cancel()
					ok = err == nil
					if ok && rng.IntN(2) == 0 {
						p.Settle(1)
					}
				case 1:
					k.Limiter(key).Bucket("req").Tokens()
				case 2:
					k.WaitTime(key, 1)
				case 3:
					if rng.IntN(100) == 0 {
						k.Sweep()
						runtime.GC()
					}
				default:
					ok, _ = k.TryAcquire(key, 1)
				}
				if ok {
					mu.Lock()
					granted[key]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for key, n := range granted {
		// An hour's refill is far off: no key can have granted more than
		// its capacity, whether or not it was dropped.
		if n > capacity {
			t.Fatalf("key %d granted %d > %d", key, n, capacity)
		}
	}
}

// TestKeyedTable drives one shard's table through random adds and drops in
// tables small enough for long probe runs, against a Go map.
func TestKeyedTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := &shard[int]{seed: NewKeyed(oneLimit).seed}
	p := &profile{limits: oneLimit(0), shapes: []shape{{Cap: 1, Num: 1, Den: 1, PerDen: exact.NewDivider(1)}}}
	want := map[int]bool{}
	for op := range 200_000 {
		key := rng.IntN(300)
		if want[key] != (s.locate(key, s.tag(key)) >= 0) {
			t.Fatalf("op %d: key %d held = %v in the map, not in the table", op, key, want[key])
		}
		if want[key] {
			if rng.IntN(2) == 0 {
				s.drop(s.locate(key, s.tag(key)))
				delete(want, key)
			}
		} else if len(want) < 40+op/1000 {
			s.insert(key, s.tag(key), p, 0)
			want[key] = true
		}
		if op%1000 == 0 {
			s.shrink()
		}
		if s.ents.n != len(want) {
			t.Fatalf("op %d: %d entries, want %d", op, s.ents.n, len(want))
		}
		for i := range s.ents.n {
			if s.locate(s.ents.at(i).key, s.tag(s.ents.at(i).key)) != i {
				t.Fatalf("op %d: entry %d not found at its place", op, i)
			}
		}
	}
	n := 0
	for _, sl := range s.table {
		if sl != 0 {
			n++
		}
	}
	if n != len(want) {
		t.Fatalf("%d slots in use for %d keys", n, len(want))
	}
}

func TestKeyedShardIsCacheLines(t *testing.T) {
	if n := unsafe.Sizeof(shard[string]{}); n != 192 {
		t.Fatalf("shard is %d bytes, want 192", n)
	}
}

func TestKeyedTryAcquireAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	k := NewKeyed(func(string) []Limit {
		return []Limit{{Name: "req", Capacity: 1 << 62, Rate: Per(1e9, time.Second)}}
	})
	keys := []string{"alpha", "beta", "gamma"}
	for _, key := range keys {
		k.TryAcquire(key, 1)
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		k.TryAcquire(keys[i%3], 1)
		i++
	}); n != 0 {
		t.Fatalf("%v allocs per TryAcquire on a held key", n)
	}
}

// heap returns the live heap after a full collection.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestKeyedMemory measures the live cost of a held key with one limit, and
// checks that a million keys touched once and left to refill give all their
// memory back through the lazy sweep alone.
func TestKeyedMemory(t *testing.T) {
	n := 1_000_000
	if testing.Short() || raceEnabled {
		n = 50_000
	}
	clk := clockwork.NewFakeClockAt(t0)
	k := NewKeyed(func(uint64) []Limit {
		return []Limit{{Name: "req", Capacity: 10, Rate: Per(10, time.Second)}}
	}, WithClock(clk), WithMaxKeys(0)) // no cap: a million keys
	empty := liveHeap()
	for i := range n {
		k.TryAcquire(uint64(i), 1)
	}
	full := liveHeap()
	if k.Len() != n {
		t.Fatalf("Len = %d", k.Len())
	}
	perKey := float64(full-empty) / float64(n)
	t.Logf("%d keys: heap %d -> %d bytes, %.1f bytes per key", n, empty, full, perKey)
	if perKey > 56 && !raceEnabled && n == 1_000_000 {
		t.Errorf("%.1f bytes per key, want at most 56", perKey)
	}
	// Idle for longer than the refill; then calls on other keys, which
	// are not held, so that only the lazy sweep is measured.
	clk.Advance(2 * time.Second)
	calls := drive(t, k, func(i int) uint64 { return uint64(n + i) }, 0, 20*n)
	if k.Len() != 0 {
		t.Fatalf("%d keys still held after %d calls", k.Len(), calls)
	}
	after := liveHeap()
	t.Logf("after %d calls on other keys: %d keys, heap %d bytes (empty %d, %+.2f%%)", calls, k.Len(), after, empty, 100*(float64(after)/float64(empty)-1))
	if float64(after) > 1.10*float64(empty) {
		t.Errorf("heap %d bytes after the sweep, more than 10%% above the empty limiter's %d", after, empty)
	}
	runtime.KeepAlive(k)
}

// TestKeyedPackedMatchesBucket checks the packed first level of a compact
// key (tokens*den + frac) against a Bucket of the same limit, on limits
// that pack and on ones too wide to (kept whole in the key's extra): every
// TryAcquire and WaitTime agrees, with sub-token refills in between.
func TestKeyedPackedMatchesBucket(t *testing.T) {
	limits := [][]Limit{
		{{Name: "requests", Capacity: 100, Rate: Per(100, time.Minute)}},
		{{Name: "odd", Capacity: 7, Rate: Per(3, 1700*time.Millisecond)}},
		{{Name: "wide", Capacity: 1 << 40, Rate: Per(1, time.Hour)}},
		{{Name: "wide2", Capacity: 1<<62 - 1, Rate: Per(1<<61, 3*time.Hour)}},
	}
	for _, ls := range limits {
		t.Run(ls[0].Name, func(t *testing.T) {
			clk := clockwork.NewFakeClockAt(t0)
			k := NewKeyed(func(int) []Limit { return ls }, WithClock(clk))
			b, err := New(ls[0].Capacity, ls[0].Rate, WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			for op := range 3000 {
				clk.Advance(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
				cost := 1 + rng.Int64N(min(ls[0].Capacity, 40))
				if rng.IntN(50) == 0 {
					cost = ls[0].Capacity
				}
				got, err1 := k.TryAcquire(0, cost)
				want, err2 := b.TryAcquire(cost)
				if got != want || (err1 == nil) != (err2 == nil) {
					t.Fatalf("op %d, cost %d: keyed %v, %v; bucket %v, %v", op, cost, got, err1, want, err2)
				}
				gw, _ := k.WaitTime(0, 1)
				ww, _ := b.WaitTime(1)
				if gw != ww {
					t.Fatalf("op %d: WaitTime keyed %v, bucket %v", op, gw, ww)
				}
			}
			s, tag := k.shard(0)
			e := s.ents.at(s.locate(0, tag))
			if e.held() != nil {
				t.Fatal("the key is not compact: nothing was tested")
			}
			if wide := strings.HasPrefix(ls[0].Name, "wide"); e.prof().wide != wide {
				t.Fatalf("profile wide = %v, want %v", e.prof().wide, wide)
			}
		})
	}
}
