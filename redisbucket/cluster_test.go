package redisbucket_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
	"github.com/throttlekit/throttle/redisbucket/internal/redistest"
)

// clusterBackend is the cluster named by THROTTLE_REDIS_CLUSTER or, when
// that is unset, six redis-server processes started for this test.
func clusterBackend(t *testing.T) *redistest.Backend {
	if redistest.ClusterSeeds() != nil {
		return redistest.Cluster(t)
	}
	return redistest.StartCluster(t).Backend(t)
}

func TestCluster(t *testing.T) {
	be := clusterBackend(t)
	ctx := context.Background()
	c := be.Client().(*redis.ClusterClient)

	t.Run("limiters spread over shards, keys of one limiter share a slot", func(t *testing.T) {
		masters := map[string]int{}
		for i := range 60 {
			l, err := redisbucket.NewLimiter(c, fmt.Sprintf("tenant-%d:model", i), rpmTPM, redisbucket.WithPrefix(be.Prefix),
				redisbucket.WithFailurePolicy(redisbucket.FailClosed), redisbucket.WithCallTimeout(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			p, err := l.Acquire(ctx, 1, 10) // state key and permit key in one script: no CROSSSLOT
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Settle(1, 5); err != nil {
				t.Fatal(err)
			}
			if s := l.Stats(); s.FailureDecisions != 0 || s.CallErrors != 0 {
				t.Fatalf("stats %+v", s)
			}
			m, err := c.MasterForKey(ctx, l.Key())
			if err != nil {
				t.Fatal(err)
			}
			masters[m.Options().Addr]++
		}
		if len(masters) < 3 {
			t.Fatalf("60 limiters landed on %d masters: %v", len(masters), masters)
		}
		t.Logf("limiters per master: %v", masters)
	})

	t.Run("concurrent clients never exceed the limit", func(t *testing.T) {
		hammer(t, be, "cluster-hammer", 20, throttle.Per(400, time.Second), 3, 4, 500*time.Millisecond)
	})

	t.Run("a lowered quota and a pause: the state and fleet keys in one slot", func(t *testing.T) {
		// The default policy, FailLocal, registers in the fleet key with
		// the first call of each limiter: Tune's among them.
		var ls [2]*redisbucket.Limiter
		for i := range ls {
			l, err := redisbucket.NewLimiter(c, "tuned", fast, redisbucket.WithPrefix(be.Prefix), redisbucket.WithCallTimeout(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			ls[i] = l
		}
		ls[0].Tune(0, 300, time.Minute) // 5 a second, capacity 5
		ls[0].PauseUntil(time.Now().Add(time.Minute))
		if ok, err := ls[1].TryAcquire(1, 0); ok || err != nil {
			t.Fatalf("granted in the pause: %v, %v", ok, err)
		}
		if d, err := ls[1].WaitTime(1, 0); err != nil || d < 59*time.Second {
			t.Fatalf("WaitTime(1, 0) = %v, %v; want the pause's minute", d, err)
		}
		if v, err := ls[1].Tokens(ctx); err != nil || v[0] != 5 {
			t.Fatalf("levels %v, %v; want 5 requests at the pause's end", v, err)
		}
		for i, l := range ls {
			if s := l.Stats(); s.CallErrors != 0 || s.FailureDecisions != 0 {
				t.Fatalf("limiter %d: stats %+v", i, s)
			}
		}
	})

	t.Run("NOSCRIPT after SCRIPT FLUSH on every master", func(t *testing.T) {
		b, err := redisbucket.New(c, "flush", 5, throttle.Per(1, time.Second), redisbucket.WithPrefix(be.Prefix),
			redisbucket.WithCallTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		b.TryAcquire(1)
		if err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.ScriptFlush(ctx).Err() }); err != nil {
			t.Fatal(err)
		}
		if ok, err := b.TryAcquire(1); !ok || err != nil {
			t.Fatalf("after flush: %v %v", ok, err)
		}
	})
}

// TestClusterFailover runs clients against a limiter while its master is
// replaced by its replica with CLUSTER FAILOVER (a coordinated failover:
// the replica catches up first, so Redis loses no write). The limiter must
// lose nothing either: grants stay within capacity + rate x elapsed, with
// FailClosed so that no decision is taken outside Redis, and decisions go
// on on the new master (whose script cache is empty: NOSCRIPT, then EVAL).
func TestClusterFailover(t *testing.T) {
	lc := redistest.StartCluster(t)
	be := lc.Backend(t)
	ctx := context.Background()
	const id = "failover"
	key := be.Prefix + "{" + id + "}"

	admin := be.Client().(*redis.ClusterClient)
	master, err := admin.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var replicaAddr string
	for i, n := range lc.Nodes[:3] {
		if n.Addr == master.Options().Addr {
			replicaAddr = lc.Nodes[i+3].Addr
		}
	}
	if replicaAddr == "" {
		t.Fatalf("master %s of %s not found", master.Options().Addr, key)
	}

	var grants atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 8)
	capacity, rate := int64(10), throttle.Per(300, time.Second)
	buckets := make([]*redisbucket.Bucket, 2)
	for i := range buckets {
		buckets[i], err = redisbucket.New(be.Client(), id, capacity, rate, redisbucket.WithPrefix(be.Prefix),
			redisbucket.WithFailurePolicy(redisbucket.FailClosed), redisbucket.WithCallTimeout(time.Second),
			redisbucket.WithProbeBackoff(10*time.Millisecond, 100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { buckets[i].Close() })
	}
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop); wg.Wait() }) }
	defer halt() // also when a check below fails
	start := time.Now()
	for _, b := range buckets {
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					ok, err := b.TryAcquire(1)
					if err != nil {
						errs <- err
						return
					}
					if ok {
						grants.Add(1)
					} else {
						time.Sleep(200 * time.Microsecond)
					}
				}
			}()
		}
	}
	time.Sleep(300 * time.Millisecond) // bounded real-time load before the failover
	replica := redis.NewClient(&redis.Options{Addr: replicaAddr, DisableIdentity: true})
	defer replica.Close()
	// A manual failover that cannot complete within 5 s (a loaded machine)
	// is aborted by Redis; ask again.
	for attempt := 0; ; attempt++ {
		if err := replica.ClusterFailover(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		promoted := false
		deadline := time.Now().Add(6 * time.Second)
		for !promoted && time.Now().Before(deadline) {
			info, err := replica.Info(ctx, "replication").Result()
			promoted = err == nil && strings.Contains(info, "role:master")
			time.Sleep(10 * time.Millisecond)
		}
		if promoted {
			break
		}
		if attempt == 2 {
			t.Fatal("the replica did not become master after 3 CLUSTER FAILOVER attempts")
		}
	}
	before := grants.Load()
	waitUntil(t, "grants on the new master", func() bool { return grants.Load() > before+50 })
	halt()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatalf("decision failed: %v", err)
	}
	bound := capacity + int64(300*elapsed.Seconds())
	var failures int64
	for _, b := range buckets {
		failures += b.Stats().FailureDecisions
	}
	t.Logf("%d grants in %v (bound %d); %d decisions refused by FailClosed during the failover", grants.Load(), elapsed, bound, failures)
	if grants.Load() > bound {
		t.Fatalf("over-admission across the failover: %d > %d", grants.Load(), bound)
	}
	// The key's slot is now served by the former replica.
	slot, err := replica.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	slots, err := replica.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	owner := ""
	for _, s := range slots {
		if int64(s.Start) <= slot && slot <= int64(s.End) {
			owner = s.Nodes[0].Addr
		}
	}
	if owner != replicaAddr {
		t.Fatalf("slot %d served by %s after the failover, want %s", slot, owner, replicaAddr)
	}
}
