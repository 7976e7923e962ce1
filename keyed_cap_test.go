package throttle

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// overflowBucket returns which overflow bucket key of k falls in, among
// those of the first set of limits to overflow.
func overflowBucket[K comparable](k *Keyed[K], key K) (*shard[K], uint32) {
	s, tag := k.shard(key)
	return s, (tag >> 16) % (overflowSlots / numShards)
}

// sameBucket returns n keys from from on that fall in one overflow bucket,
// and one key that falls in another.
func sameBucket(k *Keyed[int], from, n int) (same []int, other int) {
	s0, b0 := overflowBucket(k, from)
	same, other = []int{from}, -1
	for key := from + 1; len(same) < n || other < 0; key++ {
		if s, b := overflowBucket(k, key); s == s0 && b == b0 {
			same = append(same, key)
		} else if other < 0 {
			other = key
		}
	}
	return same[:n], other
}

// TestKeyedMaxKeysOverflow checks the policy of WithMaxKeys: at the cap,
// keys not held are decided on the overflow bucket their hash picks, which
// they share with the other keys that pick it and with no others; the keys
// held keep their own levels, Len never exceeds the cap, and room made by
// the sweep goes to the next new key, which starts full.
func TestKeyedMaxKeysOverflow(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	k := NewKeyed(oneLimit, WithClock(clk), WithMaxKeys(100)) // 10 tokens, 10/s: refills from empty in 1s
	for key := range 100 {
		if ok, err := k.TryAcquire(key, 3); !ok || err != nil {
			t.Fatalf("key %d: %v, %v", key, ok, err)
		}
	}
	if n := k.Len(); n != 100 {
		t.Fatalf("Len = %d, want 100", n)
	}
	// New keys of one bucket overflow into it: together they get one
	// key's 10 tokens; a key of another bucket still has its own 10.
	same, other := sameBucket(k, 1000, 20)
	granted := 0
	for _, key := range same {
		if ok, err := k.TryAcquire(key, 1); err != nil {
			t.Fatal(err)
		} else if ok {
			granted++
		}
	}
	if granted != 10 || k.Len() != 100 {
		t.Fatalf("20 new keys of one overflow bucket at the cap: %d granted, Len %d; want 10 granted, Len 100", granted, k.Len())
	}
	if ok, err := k.TryAcquire(other, 10); !ok || err != nil {
		t.Fatalf("a new key of another overflow bucket refused its 10 tokens: %v, %v", ok, err)
	}
	if a, b := k.Limiter(same[0]), k.Limiter(same[1]); a == nil || a.Buckets()[0] != b.Buckets()[0] {
		t.Fatalf("keys of one overflow bucket have Limiters over %p and %p, want one", a.Buckets()[0], b.Buckets()[0])
	}
	if a, b := k.Limiter(same[0]), k.Limiter(other); a.Buckets()[0] == b.Buckets()[0] {
		t.Fatal("keys of two overflow buckets share a Limiter")
	}
	if d, err := k.WaitTime(same[2], 1); err != nil || d != 100*time.Millisecond {
		t.Fatalf("WaitTime of an overflowing key = %v, %v; want its bucket's 100ms", d, err)
	}
	// The keys held keep their own levels: 7 tokens each.
	for key := range 100 {
		if ok, _ := k.TryAcquire(key, 7); !ok {
			t.Fatalf("key %d refused its own 7 tokens", key)
		}
		if ok, _ := k.TryAcquire(key, 1); ok {
			t.Fatalf("key %d granted an 11th token", key)
		}
	}
	// Refilled but used less than a refill time ago: still held, and new
	// keys still overflow however much they call.
	clk.Advance(999 * time.Millisecond)
	for key := 5000; key < 5100; key++ {
		k.TryAcquire(key, 1)
	}
	if n := k.Len(); n != 100 {
		t.Fatalf("Len = %d after new keys before the held ones were idle", n)
	}
	// Idle for their refill time: the next new keys find room, and each
	// starts full.
	clk.Advance(time.Millisecond)
	for key := 6000; key < 6050; key++ {
		if ok, _ := k.TryAcquire(key, 10); !ok {
			t.Fatalf("new key %d, with room, refused a full bucket", key)
		}
	}
	if n := k.Len(); n > 100 {
		t.Fatalf("Len = %d above the cap", n)
	}
	if s, tag := k.shard(6000); s.locate(6000, tag) < 0 {
		t.Fatal("a new key that found room was not made")
	}
}

// TestKeyedMaxKeysAcquireOverflows checks Acquire on an overflowing key: it
// waits on its overflow bucket's Limiter, in FIFO with the other keys of the
// bucket, and leaves other buckets alone.
func TestKeyedMaxKeysAcquireOverflows(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	k := NewKeyed(oneLimit, WithClock(clk), WithMaxKeys(1))
	if ok, _ := k.TryAcquire(0, 10); !ok {
		t.Fatal("refused")
	}
	same, other := sameBucket(k, 1, 2)
	p, err := k.Acquire(t.Context(), same[0], 10)
	if err != nil || p == nil {
		t.Fatalf("Acquire on an overflowing key: %v", err)
	}
	if ok, _ := k.TryAcquire(same[1], 1); ok {
		t.Fatal("another key of the bucket was granted from the emptied bucket")
	}
	if ok, _ := k.TryAcquire(other, 10); !ok {
		t.Fatal("a key of another bucket was refused")
	}
	if n := k.Len(); n != 1 {
		t.Fatalf("Len = %d, want 1", n)
	}
}

// TestKeyedMaxKeysNeverEarly: a key with a waiter, a pause or a debt is
// never dropped for room, however many new keys arrive.
func TestKeyedMaxKeysNeverEarly(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	k := NewKeyed(oneLimit, WithClock(clk), WithMaxKeys(2))
	l := k.Limiter(0)
	l.PauseUntil(clk.Now().Add(time.Hour))
	if ok, _ := k.TryAcquire(1, 10); !ok {
		t.Fatal("refused")
	}
	clk.Advance(10 * time.Second)
	for key := 2; key < 200; key++ {
		k.TryAcquire(key, 1)
	}
	if s, tag := k.shard(0); s.locate(0, tag) < 0 {
		t.Fatal("the paused key was dropped for room")
	}
	if until, ok := k.Limiter(0).Buckets()[0].PausedUntil(); !ok || !until.Equal(t0.Add(time.Hour)) {
		t.Fatalf("key 0 paused until %v, %v", until, ok)
	}
}

// TestKeyedMaxKeysTooManySets: overflow Limiters are bounded too.
func TestKeyedMaxKeysTooManySets(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	k := NewKeyed(func(key int) []Limit {
		return []Limit{{Name: "req", Capacity: int64(1 + key%1000), Rate: Per(1, time.Hour)}}
	}, WithClock(clk), WithMaxKeys(1))
	k.TryAcquire(0, 1)
	var err error
	for key := 1; key <= maxOverflowSets+1 && err == nil; key++ {
		_, err = k.TryAcquire(key, 1)
	}
	if !errors.Is(err, ErrTooManyKeys) {
		t.Fatalf("the %dth overflow set: error %v, want ErrTooManyKeys", maxOverflowSets+1, err)
	}
	if _, err := k.TryAcquire(1, 1); err != nil {
		t.Fatalf("a key of an existing overflow set: %v", err)
	}
}

// TestKeyedSweepBound checks the documented pace of the lazy sweep: N keys
// that become droppable among M others in steady use are dropped within
// (N+M)/2 calls on the keys in use the first time the sweep passes (every
// chunk is due: their bounds date from the keys' insertion), and within
// about N calls once the sweep has looked at the keys in use. The keys
// hash with a new seed each run, so the count varies: over 40 runs the
// later pass took 0.70-1.12 calls per idle key (median 0.80), hence the
// bound of 1.25 N.
func TestKeyedSweepBound(t *testing.T) {
	k, clk := newKeyedFake(t, oneLimit) // refills from empty in 1s
	const active, idle = 10_000, 2_000
	for key := range active {
		k.TryAcquire(key, 1)
	}
	// The active keys are used every 200ms; the idle ones once, when they
	// are added. It returns the calls made from the instant the idle keys
	// became droppable until they were all dropped.
	phase := func(first int) int {
		for key := first; key < first+idle; key++ {
			k.TryAcquire(key, 1)
		}
		calls := 0
		for round := 0; k.Len() > active; round++ {
			if round > 100 {
				t.Fatalf("%d keys held after %d calls on %d active keys", k.Len(), calls, active)
			}
			clk.Advance(200 * time.Millisecond)
			for key := range active {
				if ok, _ := k.TryAcquire(key, 1); !ok {
					t.Fatalf("active key %d refused", key)
				}
				if round >= 4 { // the idle keys are droppable from 1s on
					calls++
				}
				if key%numShards == 0 && k.Len() == active {
					break
				}
			}
		}
		return calls
	}
	first := phase(active)
	t.Logf("first pass: %d idle keys among %d in use dropped in %d calls", idle, active, first)
	if first > (active+idle)/2 {
		t.Errorf("first pass: %d calls to drop %d idle keys among %d, want at most %d", first, idle, active, (active+idle)/2)
	}
	second := phase(2 * active)
	t.Logf("later: %d idle keys among %d in use dropped in %d calls", idle, active, second)
	if second > idle*5/4 {
		t.Errorf("later: %d calls to drop %d idle keys among %d, want at most %d", second, idle, active, idle*5/4)
	}
}

func BenchmarkKeyedMaxKeysOverflow(b *testing.B) {
	k := NewKeyed(oneLimit, WithMaxKeys(1000))
	for key := range 1000 {
		k.TryAcquire(key, 1)
	}
	key := 1 << 20
	for b.Loop() {
		key++
		k.TryAcquire(key, 1)
	}
	b.ReportMetric(float64(k.Len()), "held")
}

// TestKeyedMaxKeysConcurrent drives a capped Keyed from many goroutines,
// through every entry point and Handler's (admit), on the real clock with keys
// that refill in a millisecond, so that keys are made, overflow and are
// dropped all the time: for the race detector, and for the cap, which Len
// must never exceed and the key count must match once quiet.
func TestKeyedMaxKeysConcurrent(t *testing.T) {
	const maxKeys = 100
	k := NewKeyed(func(int) []Limit {
		return []Limit{{Name: "req", Capacity: 2, Rate: Per(2, time.Millisecond)}}
	}, WithMaxKeys(maxKeys))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for i := range 2000 {
				key := rng.IntN(5000)
				switch rng.IntN(8) {
				case 0:
					ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
					if p, err := k.Acquire(ctx, key, 1); err == nil && rng.IntN(2) == 0 {
						p.Settle(2)
					}
					cancel()
				case 1:
					k.Limiter(key).Buckets()[0].Tokens()
				case 2:
					k.WaitTime(key, 1)
				case 3:
					if rng.IntN(50) == 0 {
						k.Sweep()
					}
				case 4, 5:
					// Handler's path under PerKey: admit under the
					// shard lock, then, for a handler that asks for its
					// Permit (RequestPermit), the key's Limiter.
					lim, d, err := k.admit(key, nil, nil)
					if err == nil && lim == nil && d.OK && rng.IntN(3) == 0 {
						if l := k.Limiter(key); l != nil {
							newPermit(l.bs, d.Costs).Settle(2)
						}
					}
				default:
					k.TryAcquire(key, 1)
				}
				if i%100 == 0 {
					if n := k.Len(); n > maxKeys {
						t.Errorf("Len %d above the cap %d", n, maxKeys)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	n := 0
	for i := range k.shards {
		n += k.shards[i].ents.n
	}
	if c := k.Len(); n != c || n > maxKeys {
		t.Fatalf("%d keys in the shards, Len %d, cap %d", n, c, maxKeys)
	}
}

// TestKeyedOverflowBucketCompactsAgain: an overflow bucket that got a
// Limiter (an Acquire on a key that overflowed) goes back to its compact
// form once its Permit is gone and it is full again, and decides as before.
func TestKeyedOverflowBucketCompactsAgain(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	k := NewKeyed(oneLimit, WithClock(clk), WithMaxKeys(1))
	if ok, _ := k.TryAcquire(0, 10); !ok {
		t.Fatal("refused")
	}
	same, _ := sameBucket(k, 1, 2)
	p, err := k.Acquire(t.Context(), same[0], 4)
	if err != nil {
		t.Fatal(err)
	}
	s, b := overflowBucket(k, same[0])
	e := &s.over[0].ents[b]
	if e.held() == nil {
		t.Fatal("the bucket has no Limiter after an Acquire")
	}
	if ok, _ := k.TryAcquire(same[1], 7); ok {
		t.Fatal("the bucket's other key was granted 7 of the 6 left")
	}
	p.Settle(4)
	p = nil
	runtime.GC()
	// Full again, and key 0 kept in use, so that it holds the cap.
	for range 2 {
		clk.Advance(500 * time.Millisecond)
		k.TryAcquire(0, 1)
	}
	if ok, _ := k.TryAcquire(same[1], 10); !ok {
		t.Fatal("the full bucket refused 10")
	}
	if e.held() != nil {
		t.Fatal("the bucket kept its Limiter once idle and full")
	}
	if ok, _ := k.TryAcquire(same[0], 1); ok {
		t.Fatal("the bucket, compact again, granted an 11th token")
	}
}
