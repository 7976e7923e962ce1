package benchmarks

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// hotKeys is the number of keys the keyed benchmarks spread their calls
// over: tenants or API keys of a busy service, all in steady use.
const hotKeys = 10_000

func keyNames(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("tenant-%06d", i)
	}
	return keys
}

// keyedConfig gives every key the limit of the core benchmarks' state, so
// that the single-bucket and per-key figures measure the same arithmetic:
// "full" stays at capacity, "refilling" is drained to half first (by
// prepare) and does the general refill arithmetic on every call. Neither
// rejects a call during a benchmark, and neither goes idle long enough to be
// dropped, so every call finds its key held: the hot path.
func keyedConfig(state string) func(string) []throttle.Limit {
	l := throttle.Limit{Name: "req", Capacity: fullCapacity, Rate: throttle.Per(fullRate, time.Second)}
	if state == "refilling" {
		l = throttle.Limit{Name: "req", Capacity: refillBurst, Rate: throttle.Per(refillPerSec, time.Second)}
	}
	return func(string) []throttle.Limit { return []throttle.Limit{l} }
}

// prepareCost is what each key spends before the clock starts: 1 for
// "full", half the capacity for "refilling".
func prepareCost(state string) int64 {
	if state == "refilling" {
		return refillDrained
	}
	return 1
}

// mutexMap is the naive per-key limiter: one mutex over a map of buckets.
type mutexMap[K comparable] struct {
	mu sync.Mutex
	m  map[K]*throttle.Bucket
	fn func() (*throttle.Bucket, error)
}

func (mm *mutexMap[K]) TryAcquire(key K, cost int64) (bool, error) {
	mm.mu.Lock()
	b, ok := mm.m[key]
	if !ok {
		var err error
		if b, err = mm.fn(); err != nil {
			mm.mu.Unlock()
			return false, err
		}
		mm.m[key] = b
	}
	mm.mu.Unlock()
	return b.TryAcquire(cost)
}

// syncMap is the per-key limiter most Go code reaches for next: buckets in a
// sync.Map, which reads without a lock. Like mutexMap it never drops a key.
type syncMap struct {
	m  sync.Map
	fn func() (*throttle.Bucket, error)
}

func (sm *syncMap) TryAcquire(key string, cost int64) (bool, error) {
	v, ok := sm.m.Load(key)
	if !ok {
		b, err := sm.fn()
		if err != nil {
			return false, err
		}
		v, _ = sm.m.LoadOrStore(key, b)
	}
	return v.(*throttle.Bucket).TryAcquire(cost)
}

type tryAcquirer interface {
	TryAcquire(key string, cost int64) (bool, error)
}

// keyedAdapter gives Keyed the shape of the baselines.
type keyedAdapter struct{ k *throttle.Keyed[string] }

func (a keyedAdapter) TryAcquire(key string, cost int64) (bool, error) {
	return a.k.TryAcquire(key, cost)
}

// singleAdapter sends every key to one bucket: the floor the per-key
// limiters are measured against.
type singleAdapter struct{ b *throttle.Bucket }

func (a singleAdapter) TryAcquire(_ string, cost int64) (bool, error) {
	return a.b.TryAcquire(cost)
}

// perKeyLib builds the contender name for a state, with every key already
// held and prepared, and collects the garbage of doing so.
func perKeyLib(b *testing.B, name, state string, keys []string) tryAcquirer {
	b.Helper()
	newBucket := func() (*throttle.Bucket, error) {
		l := keyedConfig(state)("")[0]
		return throttle.New(l.Capacity, l.Rate)
	}
	var l tryAcquirer
	switch name {
	case "keyed":
		l = keyedAdapter{throttle.NewKeyed(keyedConfig(state))}
	case "mutexmap":
		l = &mutexMap[string]{m: map[string]*throttle.Bucket{}, fn: newBucket}
	case "syncmap":
		l = &syncMap{fn: newBucket}
	case "single":
		l = singleAdapter{newThrottle(b, state)}
	}
	if name != "single" {
		for _, key := range keys {
			if ok, err := l.TryAcquire(key, prepareCost(state)); !ok || err != nil {
				b.Fatalf("%s: preparing %s: %v, %v", name, key, ok, err)
			}
		}
	}
	runtime.GC()
	return l
}

var perKeyOrder = []string{"keyed", "mutexmap", "syncmap", "single"}

// BenchmarkKeyedTryAcquire measures TryAcquire(key, 1) over 10,000 hot keys
// from GOMAXPROCS goroutines, each walking the keys from its own start:
// lib=keyed is throttle.Keyed; lib=mutexmap a sync.Mutex over a
// map[string]*throttle.Bucket; lib=syncmap a sync.Map of buckets;
// lib=single one shared bucket whatever the key (the floor: one lock, no
// lookup, but every goroutine on the same lock). Targets: keyed at 0
// allocs/op, and faster than mutexmap in parallel.
func BenchmarkKeyedTryAcquire(b *testing.B) {
	keys := keyNames(hotKeys)
	for _, state := range states {
		for _, name := range perKeyOrder {
			b.Run("state="+state+"/lib="+name, func(b *testing.B) {
				l := perKeyLib(b, name, state, keys)
				var starts atomic.Uint64
				b.ReportAllocs()
				b.ResetTimer()
				begin := readUsage(b)
				b.RunParallel(func(pb *testing.PB) {
					i := int(starts.Add(1)*7919) % len(keys)
					for pb.Next() {
						if ok, err := l.TryAcquire(keys[i], 1); !ok || err != nil {
							b.Errorf("TryAcquire(%q) = %v, %v", keys[i], ok, err)
							return
						}
						if i++; i == len(keys) {
							i = 0
						}
					}
				})
				b.ReportMetric(float64(readUsage(b).cpu-begin.cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkKeyedTryAcquireSerial is BenchmarkKeyedTryAcquire from one
// goroutine: the cost of one decision with no contention.
func BenchmarkKeyedTryAcquireSerial(b *testing.B) {
	keys := keyNames(hotKeys)
	for _, state := range states {
		for _, name := range perKeyOrder {
			b.Run("state="+state+"/lib="+name, func(b *testing.B) {
				l := perKeyLib(b, name, state, keys)
				i := 0
				b.ResetTimer()
				serialLoop(b, func() {
					if ok, err := l.TryAcquire(keys[i], 1); !ok || err != nil {
						b.Fatalf("TryAcquire(%q) = %v, %v", keys[i], ok, err)
					}
					if i++; i == len(keys) {
						i = 0
					}
				})
			})
		}
	}
}

// BenchmarkKeyedNewKeys measures a stream of keys each used once, on the
// real clock: every op makes a key (config call included), and the lazy
// sweep drops keys a microsecond after their last use (capacity 1, one
// token a microsecond), so the map stays small however long the run.
// keys-held is the number held at the end.
func BenchmarkKeyedNewKeys(b *testing.B) {
	limits := []throttle.Limit{{Name: "req", Capacity: 1, Rate: throttle.Per(1, time.Microsecond)}}
	k := throttle.NewKeyed(func(uint64) []throttle.Limit { return limits })
	var key uint64
	serialLoop(b, func() {
		key++
		if ok, err := k.TryAcquire(key, 1); !ok || err != nil {
			b.Fatalf("TryAcquire = %v, %v", ok, err)
		}
	})
	b.ReportMetric(float64(k.Len()), "keys-held")
}

// BenchmarkKeyedAcquireFree measures Acquire(ctx, key, 1) when the tokens
// are there, from one goroutine, over 100 keys (hosts, say) and over the
// 10,000 hot keys: the fast path of the blocking API. Each call returns a
// Permit, which needs the key's full Limiter, so the keys here are held
// with one (made before the clock starts), and the permits are dropped
// unsettled. After each garbage collection a key's first Acquire makes a
// new weak pointer (about a microsecond), which is why many keys cost more
// per call than few.
func BenchmarkKeyedAcquireFree(b *testing.B) {
	for _, n := range []int{100, hotKeys} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			keys := keyNames(n)
			ctx := b.Context()
			k := throttle.NewKeyed(keyedConfig("full"))
			for _, key := range keys {
				if _, err := k.Acquire(ctx, key, 1); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			b.ResetTimer()
			serialLoop(b, func() {
				if _, err := k.Acquire(ctx, keys[i], 1); err != nil {
					b.Fatal(err)
				}
				if i++; i == len(keys) {
					i = 0
				}
			})
		})
	}
}

// liveHeap returns the live heap after a full collection.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// memoryKeys is the number of distinct keys of the memory benchmark.
const memoryKeys = 1_000_000

// BenchmarkKeyedMemory touches 1,000,000 distinct keys once each (one
// limit: 10 tokens, refilled at 10 a second) on a fake clock, lets them
// idle for 2s, past the 1s they take to refill from empty, then makes
// WaitTime calls on keys that are not held (one per shard in turn) until the
// lazy sweep has dropped every key. One op is that whole scenario; run it
// with -benchtime 1x. It reports:
//
//   - B/key: live heap per held key (runtime.MemStats.HeapAlloc after
//     runtime.GC, before and after the inserts); target: at most 128.
//   - heap-after-%, heap-after-B: the heap once the keys are dropped,
//     above the heap with the empty limiter, in percent (target: at most
//     10) and in bytes.
//   - calls/key: calls on other keys the lazy sweep needed per dropped key
//     (a call on a held key moves the sweep a quarter step).
//
// The heap with the empty limiter includes the drivers and, for
// key=string, the key strings: key=string uses keys made before the first
// measurement, so B/key counts
// the string header the limiter stores but not the bytes the caller owns.
//
// lib=mutexmap/key=uint64 reports B/key for the naive map of *Bucket, for
// comparison; it never drops a key.
func BenchmarkKeyedMemory(b *testing.B) {
	b.Run("lib=mutexmap/key=uint64", func(b *testing.B) {
		var perKey float64
		for b.Loop() {
			mm := &mutexMap[uint64]{m: map[uint64]*throttle.Bucket{}, fn: func() (*throttle.Bucket, error) {
				return throttle.New(10, throttle.Per(10, time.Second))
			}}
			empty := liveHeap()
			for i := range memoryKeys {
				if ok, err := mm.TryAcquire(uint64(i), 1); !ok || err != nil {
					b.Fatalf("TryAcquire = %v, %v", ok, err)
				}
			}
			perKey = float64(liveHeap()-empty) / memoryKeys
			runtime.KeepAlive(mm)
		}
		b.ReportMetric(perKey, "B/key")
	})
	b.Run("lib=keyed/key=uint64", func(b *testing.B) {
		keyedMemory(b, func(i int) uint64 { return uint64(i) })
	})
	b.Run("lib=keyed/key=string", func(b *testing.B) {
		keys := make([]string, memoryKeys+hotKeys)
		for i := range keys {
			keys[i] = fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15)
		}
		keyedMemory(b, func(i int) string { return keys[i] })
		runtime.KeepAlive(keys)
	})
}

func keyedMemory[K comparable](b *testing.B, key func(int) K) {
	var perKey, after, afterB, calls float64
	for b.Loop() {
		clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		k := throttle.NewKeyed(func(K) []throttle.Limit {
			return []throttle.Limit{{Name: "req", Capacity: 10, Rate: throttle.Per(10, time.Second)}}
		}, throttle.WithClock(clk), throttle.WithMaxKeys(0)) // the default cap is below memoryKeys
		// Drivers: keys past the inserted ones, enough that every shard
		// gets its share of calls. A WaitTime on a key not held sweeps its
		// shard without adding the key.
		drivers := make([]K, hotKeys)
		for i := range drivers {
			drivers[i] = key(memoryKeys + i)
		}
		empty := liveHeap()
		for i := range memoryKeys {
			if ok, err := k.TryAcquire(key(i), 1); !ok || err != nil {
				b.Fatalf("TryAcquire = %v, %v", ok, err)
			}
		}
		full := liveHeap()
		if k.Len() != memoryKeys {
			b.Fatalf("Len = %d", k.Len())
		}
		clk.Advance(2 * time.Second)
		n := 0
		for k.Len() > 0 {
			for _, d := range drivers {
				k.WaitTime(d, 1)
			}
			n += len(drivers)
			if n > 50*memoryKeys {
				b.Fatalf("%d keys still held after %d calls", k.Len(), n)
			}
		}
		done := liveHeap()
		perKey = float64(full-empty) / memoryKeys
		after = 100 * (float64(done)/float64(empty) - 1)
		afterB = float64(done) - float64(empty)
		calls = float64(n) / memoryKeys
		b.Logf("heap: empty %d B, %d keys %d B, dropped %d B", empty, memoryKeys, full, done)
		runtime.KeepAlive(k)
		runtime.KeepAlive(drivers) // counted in empty: must be in done too
	}
	b.ReportMetric(perKey, "B/key")
	b.ReportMetric(after, "heap-after-%")
	b.ReportMetric(afterB, "heap-after-B")
	b.ReportMetric(calls, "calls/key")
}
