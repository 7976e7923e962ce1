package benchmarks

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// sleepCtx waits d or until ctx ends, reporting whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// unserved is the outcome of a call that ended without a 200: shed if it
// never reached the vendor, failed otherwise.
func unserved(attempts int, why error) error {
	if attempts == 0 {
		return errShed
	}
	return why
}

// poolRoundRobin is the key pool most users write: each call goes to the
// next key in turn, and a 429 moves it to the next key at once; after a
// 429 from every key in a row it backs off (half a scaled second,
// doubling), until its deadline. It keeps no rate of its own.
func poolRoundRobin(spec poolSpec) func(url string, keys []string) poolCaller {
	return func(url string, keys []string) poolCaller {
		var next atomic.Uint64
		c := &http.Client{Transport: baseTransport(64)}
		return func(ctx context.Context, tokens int64) error {
			back := spec.minute / 120
			for n := 0; ; n++ {
				k := keys[next.Add(1)%uint64(len(keys))]
				s, err := status(c, poolRequest(ctx, url, k, tokens))
				switch {
				case err != nil:
					return unserved(n, err)
				case s == http.StatusOK:
					return nil
				case s != http.StatusTooManyRequests:
					return fmt.Errorf("status %d", s)
				}
				if n%len(keys) == len(keys)-1 {
					if !sleepCtx(ctx, back) {
						return unserved(n+1, ctx.Err())
					}
					back *= 2
				}
			}
		}
	}
}

// poolLiteLLM follows LiteLLM's usage-based-v2 router (lowest_tpm_rpm_v2.py
// and cooldown_handlers.py): per key, counters of this minute's requests
// (counted before the call) and tokens (counted after a success, from the
// usage); a call goes to the key with the fewest tokens this minute among
// those whose counters stay within their limits with it; a key that failed
// more than half of this minute's calls cools down 5 s (scaled). It never
// reads the vendor's headers. Where LiteLLM answers "No deployments
// available", this one waits for the next minute within the call's
// deadline; a 429 is retried at once on another pick.
func poolLiteLLM(spec poolSpec) func(url string, keys []string) poolCaller {
	return func(url string, keys []string) poolCaller {
		r := &liteRouter{spec: spec, start: time.Now(), rpm: make([]int64, len(keys)), tpm: make([]int64, len(keys)),
			calls: make([]int64, len(keys)), fails: make([]int64, len(keys)), cool: make([]time.Time, len(keys))}
		c := &http.Client{Transport: baseTransport(64)}
		return func(ctx context.Context, tokens int64) error {
			for n := 0; ; {
				i, next := r.pick(tokens)
				if i < 0 {
					if !sleepCtx(ctx, time.Until(next)) {
						return unserved(n, ctx.Err())
					}
					continue
				}
				s, err := status(c, poolRequest(ctx, url, keys[i], tokens))
				n++
				r.done(i, s == http.StatusOK, tokens)
				switch {
				case err != nil:
					return unserved(n-1, err)
				case s == http.StatusOK:
					return nil
				case s != http.StatusTooManyRequests:
					return fmt.Errorf("status %d", s)
				}
			}
		}
	}
}

// liteRouter is poolLiteLLM's state.
type liteRouter struct {
	spec                   poolSpec
	start                  time.Time
	mu                     sync.Mutex
	window                 int64
	rpm, tpm, calls, fails []int64
	cool                   []time.Time
}

// roll starts a new minute's counters when the minute has changed.
func (r *liteRouter) roll(now time.Time) {
	w := int64(now.Sub(r.start) / r.spec.minute)
	if w == r.window {
		return
	}
	r.window = w
	clear(r.rpm)
	clear(r.tpm)
	clear(r.calls)
	clear(r.fails)
}

// pick returns the key for a call of tokens, counting its request, or -1
// and the start of the next minute.
func (r *liteRouter) pick(tokens int64) (int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	r.roll(now)
	best := -1
	for i := range r.rpm {
		if now.Before(r.cool[i]) || r.rpm[i]+1 > r.spec.rpm || r.tpm[i]+tokens > r.spec.tpm {
			continue
		}
		if best < 0 || r.tpm[i] < r.tpm[best] {
			best = i
		}
	}
	if best < 0 {
		return -1, r.start.Add(time.Duration(r.window+1) * r.spec.minute)
	}
	r.rpm[best]++
	r.calls[best]++
	return best, time.Time{}
}

// done counts a call's outcome on key i.
func (r *liteRouter) done(i int, ok bool, tokens int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok {
		r.tpm[i] += tokens
		return
	}
	r.fails[i]++
	if 2*r.fails[i] > r.calls[i] {
		r.cool[i] = time.Now().Add(r.spec.minute * 5 / 60)
	}
}
