package redisbucket_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
	"github.com/throttlekit/throttle/redisbucket/internal/redistest"
)

// TestRecoveryNoBurst runs four processes (each its own client and
// bucket, FailLocal with the fleet's share) at full demand through a kill
// of the real server, a restart with an empty dataset, and the eviction of
// the bucket's key, and requires every 1 s window of grants, by Redis and
// by the local shares together, to stay within capacity + rate. Before,
// the restarted server's fresh full bucket and the processes still on
// their local shares as others returned gave 903 in a second for 550.
func TestRecoveryNoBurst(t *testing.T) {
	srv := redistest.StartServer(t)
	redistest.Announce(t, "redis-server started by the test at "+srv.Addr+" (killed, restarted empty, key evicted)")
	const capacity, rate, procs = 50, 500, 4
	var mu sync.Mutex
	var grants []time.Duration
	modes := map[redisbucket.Mode]int{}
	start := time.Now()
	buckets := make([]*redisbucket.Bucket, procs)
	for i := range buckets {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, DisableIdentity: true, ContextTimeoutEnabled: true, MaxRetries: -1,
			DialTimeout: 50 * time.Millisecond, ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond})
		t.Cleanup(func() { c.Close() })
		obs := observerFunc(func(e redisbucket.Event) {
			if e.Kind == throttle.EventGranted {
				at := time.Since(start)
				mu.Lock()
				grants = append(grants, at)
				modes[e.Mode]++
				mu.Unlock()
			}
		})
		b, err := redisbucket.New(c, "recover", capacity, throttle.Per(rate, time.Second), redisbucket.WithPrefix("rec:"),
			redisbucket.WithObserver(obs), redisbucket.WithFleetTTL(2*time.Second), redisbucket.WithCallTimeout(50*time.Millisecond),
			redisbucket.WithProbeBackoff(50*time.Millisecond, 400*time.Millisecond),
			// The patience this test was written for: a 600 ms outage
			// must reach every process's failure policy, and the 500 ms
			// default let a process whose first failure came late wait
			// the outage out as suspect (3 openings of 4, once in CI).
			redisbucket.WithBreakerPatience(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		buckets[i] = b
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3400*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for _, b := range buckets {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					actx, acancel := context.WithTimeout(ctx, 200*time.Millisecond)
					b.Acquire(actx, 1)
					acancel()
				}
			}()
		}
	}
	sleepUntil := func(d time.Duration) { time.Sleep(max(0, time.Until(start.Add(d)))) }
	sleepUntil(1000 * time.Millisecond)
	srv.Stop()
	sleepUntil(1600 * time.Millisecond)
	srv.Restart()
	sleepUntil(2600 * time.Millisecond)
	evict := redis.NewClient(&redis.Options{Addr: srv.Addr, DisableIdentity: true})
	defer evict.Close()
	if err := evict.Del(context.Background(), "rec:{recover}").Err(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(grants)
	worst, at := 0, time.Duration(0)
	j := 0
	for i := range grants {
		for grants[i]-grants[j] >= time.Second {
			j++
		}
		if n := i - j + 1; n > worst {
			worst, at = n, grants[j]
		}
	}
	var opens int64
	for _, b := range buckets {
		opens += b.Stats().BreakerOpens
	}
	t.Logf("%d grants in 3.4 s (%v); worst 1 s window %d from %v, bound %d; %d breaker openings",
		len(grants), fmt.Sprint(modes), worst, at.Round(time.Millisecond), capacity+rate, opens)
	if modes[redisbucket.ModeFailLocal] == 0 || opens < procs {
		t.Fatalf("the outage did not reach the failure policy: %v, %d openings", modes, opens)
	}
	if worst > capacity+rate {
		t.Fatalf("worst 1 s window %d > capacity + rate = %d", worst, capacity+rate)
	}
}
