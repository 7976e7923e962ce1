package redisbucket

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterEvery bounds how often one limiter asks its cluster client to
// reload the slot map while calls fail.
const clusterEvery = 100 * time.Millisecond

// clusterWatch gets a limiter on a cluster off a dead primary. go-redis
// reloads its slot map only every 60 s by default, and a dead node never
// answers MOVED, so after a primary is killed and its replica promoted the
// client would keep calling the dead address for up to a minute. While
// calls fail, the watch asks for a reload (go-redis runs one at a time,
// with its own cooldown) at most every clusterEvery, and once the key's
// slot belongs to another node it has the breaker probe at once, on the new
// owner.
type clusterWatch struct {
	c   *redis.ClusterClient
	key string

	mu   sync.Mutex
	bad  string    // the node calls failed on; "" while healthy
	last time.Time // the last reload asked for
}

// owner returns the address of the primary the client's slot map names for
// the key, from the map in memory; "" if it has none.
func (w *clusterWatch) owner(ctx context.Context) string {
	m, err := w.c.MasterForKey(ctx, w.key)
	if err != nil {
		return ""
	}
	return m.Options().Addr
}

// moved is called after a call failed as unavailable: it reports whether
// the slot map already names another owner than the node that failed (the
// caller then retries there), and asks for a reload otherwise.
func (w *clusterWatch) moved(ctx context.Context, now time.Time) bool {
	cur := w.owner(ctx)
	w.mu.Lock()
	prev := w.bad
	w.bad = cur
	reload := now.Sub(w.last) >= clusterEvery
	if reload {
		w.last = now
	}
	w.mu.Unlock()
	if prev != "" && cur != "" && cur != prev {
		return true
	}
	if reload {
		w.c.ReloadState(ctx)
	}
	return false
}

// watch runs while the breaker keeps decisions away from Redis: it asks for
// a reload at most every clusterEvery, and lets the breaker probe at once
// when the slot has moved off the node that failed.
func (w *clusterWatch) watch(ctx context.Context, now time.Time, br *breaker) {
	w.mu.Lock()
	bad := w.bad
	reload := bad != "" && now.Sub(w.last) >= clusterEvery
	if reload {
		w.last = now
	}
	w.mu.Unlock()
	if !reload {
		return
	}
	if cur := w.owner(ctx); cur != "" && cur != bad {
		br.probeNow(now)
		return
	}
	w.c.ReloadState(ctx)
}

// healthy forgets the failed node after a call succeeded.
func (w *clusterWatch) healthy() {
	w.mu.Lock()
	w.bad = ""
	w.mu.Unlock()
}
