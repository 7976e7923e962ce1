package benchmarks

import (
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
	"github.com/throttlekit/throttle/pool"
)

// learnWatch records, for each member of a pool of auto Quotas, how many
// calls had reached its key at the vendor when its limits were first
// seen learned: each member's requests and tokens a minute, exactly.
type learnWatch struct {
	a     *auto.Limiter
	want  map[string][2]int64
	v     *poolVendor // set before the first call
	mu    sync.Mutex
	calls map[string]int64
}

// look notes the members whose limits are learned now.
func (w *learnWatch) look() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.calls) == len(w.want) {
		return
	}
	for _, q := range w.a.Stats() {
		want, ok := w.want[q.Key]
		if _, seen := w.calls[q.Key]; !ok || seen || len(q.Limits) != 2 {
			continue
		}
		if q.Limits[0].Learned && q.Limits[0].Quota == want[0] && q.Limits[1].Learned && q.Limits[1].Quota == want[1] {
			w.calls[q.Key] = w.v.keys[q.Key].attempts.Load()
		}
	}
}

// poolAuto is this library with nothing configured: a pool of one auto
// Quota per key, which learns each key's limits from its headers.
func poolAuto(spec poolSpec, w *learnWatch) func(url string, keys []string) poolCaller {
	return func(url string, keys []string) poolCaller {
		a := must(auto.New())
		w.a, w.want, w.calls = a, map[string][2]int64{}, map[string]int64{}
		var ms []pool.Member
		routes := map[string]func(*http.Request){}
		for i, k := range keys {
			rpm, tpm := spec.limitsOf(i)
			w.want[k] = [2]int64{rpm, tpm}
			ms = append(ms, pool.Member{Name: k, Gate: must(a.Quota(k, "requests", "tokens"))})
			routes[k] = must(httpthrottle.RouteTo(url, url, http.Header{"Authorization": {"Bearer " + k}}))
		}
		return poolCall(spec, url, ms, routes, w.look)
	}
}

// TestPoolUnconfigured is issue 39's unconfigured goal: the first goal's
// trace through a pool whose members' limits are not configured (an auto
// Quota each): the calls each key had answered when its limits were
// first seen learned, and the quota served. THROTTLE_POOL_TABLE=1 runs it.
func TestPoolUnconfigured(t *testing.T) {
	if os.Getenv("THROTTLE_POOL_TABLE") == "" {
		t.Skip("THROTTLE_POOL_TABLE=1 runs the real-time goals")
	}
	spec := poolFirstGoal(t, poolMinutes())
	if os.Getenv("THROTTLE_POOL_UNEVEN") != "" {
		spec.keys, spec.div = 2, []int64{1, 10}
	}
	w := &learnWatch{}
	r := runPoolWith(t, spec, "pool, unconfigured", poolAuto(spec, w), func(v *poolVendor) { w.v = v })
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("calls each key had answered when its limits were first seen learned: %v (of %d keys)", w.calls, spec.keys)
	if len(w.calls) != spec.keys {
		t.Errorf("learned %d keys' limits of %d", len(w.calls), spec.keys)
	}
	for k, n := range w.calls {
		if n > 10 {
			t.Errorf("%s learned after %d calls; the goal is 10", k, n)
		}
	}
	t.Log(r)
}
