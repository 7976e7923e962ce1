// Package redistest picks the Redis backend for the redisbucket tests and
// starts throwaway redis-server processes for the tests that need to kill,
// restart or fail over a server.
//
// Backend choice, in order:
//   - THROTTLE_REDIS_ADDR=host:port: that single server
//     (THROTTLE_REDIS_ADDR=miniredis forces miniredis);
//   - otherwise, when a redis-server binary is in PATH, one server the test
//     binary starts for itself on a free port (see [StopShared]);
//   - otherwise an in-process github.com/alicebob/miniredis/v2.
//
// A server that merely happens to run at 127.0.0.1:6379 is never used:
// tests delete keys by prefix, which they must not do on a server nobody
// pointed them at.
//
// THROTTLE_REDIS_CLUSTER=host:port,host:port,... additionally enables the
// tests that need a Redis Cluster (see [Cluster]).
//
// Every test gets its own key prefix and, on a real server, its keys are
// deleted when the test ends, so tests can share one server.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Environment variables that point the tests at real servers.
const (
	EnvAddr    = "THROTTLE_REDIS_ADDR"
	EnvCluster = "THROTTLE_REDIS_CLUSTER"
)

// ForceMiniredis as the value of EnvAddr selects miniredis even when a real
// server runs at DefaultAddr.
const ForceMiniredis = "miniredis"

// Backend is one Redis for one test: a real server or a miniredis.
type Backend struct {
	// Name says which backend this is, for test output.
	Name string
	// Addr is the host:port of the server (miniredis listens on one too).
	Addr string
	// Mini is the in-process server, or nil on a real server.
	Mini *miniredis.Miniredis
	// Prefix is unique to the test; every key the test writes must start with it.
	Prefix string

	tb      testing.TB
	cluster []string
}

// Real reports whether this backend is a real redis-server.
func (b *Backend) Real() bool { return b.Mini == nil }

// Cluster reports whether this backend is a Redis Cluster.
func (b *Backend) Cluster() bool { return b.cluster != nil }

var logOnce sync.Once

// Ping returns nil when a Redis server at addr answers PING within timeout.
func Ping(addr string, timeout time.Duration) error {
	c := redis.NewClient(&redis.Options{
		Addr: addr, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
		MaxRetries: -1, PoolSize: 1, DisableIdentity: true,
	})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.Ping(ctx).Err()
}

// New returns the backend for this test: the server named by EnvAddr, else
// the redis-server this test binary started for itself, else a fresh
// miniredis. It logs which one ("redis backend: ..."), and on a real server
// deletes the test's keys when the test ends.
func New(tb testing.TB) *Backend {
	tb.Helper()
	b := &Backend{tb: tb, Prefix: uniquePrefix(tb)}
	env := os.Getenv(EnvAddr)
	switch {
	case env != "" && env != ForceMiniredis:
		b.Addr = env
		b.Name = "redis-server at " + env + " (" + EnvAddr + ")"
	case env == "" && sharedAddr(tb) != "":
		b.Addr = sharedAddr(tb)
		b.Name = "redis-server started by the tests at " + b.Addr + " (set " + EnvAddr + " to use another)"
	default:
		b.Mini = miniredis.RunT(tb)
		b.Addr = b.Mini.Addr()
		b.Name = "miniredis (no redis-server in PATH; set " + EnvAddr + " to use a server)"
		if env == ForceMiniredis {
			b.Name = "miniredis (" + EnvAddr + "=" + ForceMiniredis + ")"
		}
	}
	if b.Mini == nil {
		tb.Cleanup(func() { b.deleteKeys() })
	}
	announce(tb, b.Name)
	return b
}

// Cluster returns a backend on the Redis Cluster named by THROTTLE_REDIS_CLUSTER,
// or skips the test when it is not set.
func Cluster(tb testing.TB) *Backend {
	tb.Helper()
	seeds := ClusterSeeds()
	if seeds == nil {
		tb.Skipf("no Redis Cluster: set %s=host:port,... (bash .ci/redis.sh cluster-start DIR prints it)", EnvCluster)
	}
	b := &Backend{tb: tb, Prefix: uniquePrefix(tb), cluster: seeds, Addr: seeds[0]}
	b.Name = "Redis Cluster at " + strings.Join(seeds, ",")
	announce(tb, b.Name)
	tb.Cleanup(func() { b.deleteKeys() })
	return b
}

// ClusterSeeds returns the seed addresses in THROTTLE_REDIS_CLUSTER, or nil.
func ClusterSeeds() []string {
	v := strings.TrimSpace(os.Getenv(EnvCluster))
	if v == "" {
		return nil
	}
	var seeds []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	return seeds
}

// Announce logs the backend a test uses, in the form CI greps for
// ("redis backend: ..."), for tests that build their own.
func Announce(tb testing.TB, name string) { announce(tb, name) }

func announce(tb testing.TB, name string) {
	tb.Helper()
	tb.Logf("redis backend: %s", name)
	logOnce.Do(func() { fmt.Fprintf(os.Stderr, "redistest: backend %s\n", name) })
}

// Client returns a new client with its own connection pool, as a separate
// process would have; it is closed when the test ends.
func (b *Backend) Client() redis.UniversalClient {
	var c redis.UniversalClient
	if b.cluster != nil {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: b.cluster, DisableIdentity: true})
	} else {
		c = redis.NewClient(&redis.Options{Addr: b.Addr, DisableIdentity: true})
	}
	b.tb.Cleanup(func() { c.Close() })
	return c
}

// SetTime sets the server time on miniredis; it fails the test on a real server.
func (b *Backend) SetTime(t time.Time) {
	b.tb.Helper()
	if b.Mini == nil {
		b.tb.Fatal("redistest: SetTime needs miniredis")
	}
	b.Mini.SetTime(t)
}

func (b *Backend) deleteKeys() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	del := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, b.Prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	}
	var err error
	if b.cluster != nil {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: b.cluster, DisableIdentity: true})
		defer c.Close()
		err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return del(ctx, m) })
	} else {
		c := redis.NewClient(&redis.Options{Addr: b.Addr, DisableIdentity: true})
		defer c.Close()
		err = del(ctx, c)
	}
	if err != nil {
		b.tb.Logf("redistest: deleting keys %s*: %v", b.Prefix, err)
	}
}

func uniquePrefix(tb testing.TB) string {
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		tb.Fatal(err)
	}
	name := strings.NewReplacer("/", ".", " ", "_", "*", "_", "?", "_", "[", "_", "]", "_", "{", "_", "}", "_").Replace(tb.Name())
	return "thrtest:" + name + ":" + hex.EncodeToString(r[:]) + ":"
}
