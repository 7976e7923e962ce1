// Package redistest picks the Redis backend for the redisbucket tests and
// starts throwaway redis-server processes for the tests that need to kill,
// restart or fail over a server.
//
// Backend choice, in order:
//   - THROTTLE_REDIS_ADDR=host:port: that single server
//     (THROTTLE_REDIS_ADDR=miniredis forces miniredis);
//   - otherwise a server answering PING at 127.0.0.1:6379 within 100 ms;
//   - otherwise an in-process github.com/alicebob/miniredis/v2.
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

// DefaultAddr is probed when EnvAddr is not set.
const DefaultAddr = "127.0.0.1:6379"

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

var (
	probeOnce sync.Once
	probeAddr string // "" when no real single server is available
	logOnce   sync.Once
)

func probe() string {
	probeOnce.Do(func() {
		if a := os.Getenv(EnvAddr); a != "" {
			if a != ForceMiniredis {
				probeAddr = a
			}
			return
		}
		if Ping(DefaultAddr, 100*time.Millisecond) == nil {
			probeAddr = DefaultAddr
		}
	})
	return probeAddr
}

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

// New returns the backend for this test: the real single server when one is
// configured or answers at 127.0.0.1:6379, a fresh miniredis otherwise. It
// logs which one, and deletes the test's keys when the test ends.
func New(tb testing.TB) *Backend {
	tb.Helper()
	b := &Backend{tb: tb, Prefix: uniquePrefix(tb)}
	if addr := probe(); addr != "" {
		b.Addr = addr
		b.Name = "redis-server at " + addr
		if os.Getenv(EnvAddr) != "" {
			b.Name += " (" + EnvAddr + ")"
		}
		tb.Cleanup(func() { b.deleteKeys() })
	} else {
		b.Mini = miniredis.RunT(tb)
		b.Addr = b.Mini.Addr()
		b.Name = "miniredis (no Redis at " + DefaultAddr + "; set " + EnvAddr + " to use one)"
		if os.Getenv(EnvAddr) == ForceMiniredis {
			b.Name = "miniredis (" + EnvAddr + "=" + ForceMiniredis + ")"
		}
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

func announce(tb testing.TB, name string) {
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
