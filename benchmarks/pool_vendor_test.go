package benchmarks

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// poolVendor is a loopback OpenAI-like vendor over several API keys, each
// with its own requests and tokens quotas per (scaled) minute, enforced
// exactly as OpenAI describes them: buckets of a minute's limit refilled
// continuously, a request refused with 429 when either holds less than
// it costs, every answer carrying the x-ratelimit-* headers of both. A
// request's tokens come in X-Tokens.
type poolVendor struct {
	minute   time.Duration // one scaled minute
	keys     map[string]*vendorKey
	attempts atomic.Int64
	refused  atomic.Int64
	// At the first call to a key other than key0: when, and key0's served
	// calls and tokens then (the overflow of a tiered pool).
	overflow    sync.Once
	overflowAt  time.Time
	overflowPTU [2]int64
}

// vendorKey is one key's two buckets.
type vendorKey struct {
	mu       sync.Mutex
	rpm, tpm float64
	req, tok float64 // levels
	at       time.Time
	out      bool // answers every call insufficient_quota
	served   atomic.Int64
	tokens   atomic.Int64
	attempts atomic.Int64
}

func newPoolVendor(minute time.Duration, limits map[string][2]int64) *poolVendor {
	v := &poolVendor{minute: minute, keys: map[string]*vendorKey{}}
	now := time.Now()
	for k, l := range limits {
		v.keys[k] = &vendorKey{rpm: float64(l[0]), tpm: float64(l[1]), req: float64(l[0]), tok: float64(l[1]), at: now}
	}
	return v
}

func (v *poolVendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	v.attempts.Add(1)
	k := v.keys[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	if k == nil {
		http.Error(w, `{"error":{"code":"invalid_api_key"}}`, http.StatusUnauthorized)
		return
	}
	k.attempts.Add(1)
	if k != v.keys["key0"] {
		v.overflow.Do(func() {
			p := v.keys["key0"]
			v.overflowAt, v.overflowPTU = time.Now(), [2]int64{p.served.Load(), p.tokens.Load()}
		})
	}
	if k.out {
		v.refused.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`)
		return
	}
	tokens, _ := strconv.ParseInt(r.Header.Get("X-Tokens"), 10, 64)
	ok, req, tok := k.take(time.Now(), v.minute, float64(tokens))
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Ratelimit-Limit-Requests", strconv.FormatFloat(k.rpm, 'f', 0, 64))
	h.Set("X-Ratelimit-Limit-Tokens", strconv.FormatFloat(k.tpm, 'f', 0, 64))
	h.Set("X-Ratelimit-Remaining-Requests", strconv.FormatInt(int64(req), 10))
	h.Set("X-Ratelimit-Remaining-Tokens", strconv.FormatInt(int64(tok), 10))
	h.Set("X-Ratelimit-Reset-Requests", resetOf(k.rpm-req, k.rpm, v.minute))
	h.Set("X-Ratelimit-Reset-Tokens", resetOf(k.tpm-tok, k.tpm, v.minute))
	if !ok {
		v.refused.Add(1)
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
		return
	}
	k.served.Add(1)
	k.tokens.Add(tokens)
	fmt.Fprintf(w, `{"usage":{"total_tokens":%d}}`, tokens)
}

// take refills both buckets to now and takes a request of tokens if both
// cover it, returning the levels after.
func (k *vendorKey) take(now time.Time, minute time.Duration, tokens float64) (bool, float64, float64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	el := float64(now.Sub(k.at)) / float64(minute)
	k.at = now
	k.req = min(k.rpm, k.req+el*k.rpm)
	k.tok = min(k.tpm, k.tok+el*k.tpm)
	if k.req < 1 || k.tok < tokens {
		return false, k.req, k.tok
	}
	k.req--
	k.tok -= tokens
	return true, k.req, k.tok
}

// resetOf is OpenAI's reset: the time until the bucket is full again.
func resetOf(missing, limit float64, minute time.Duration) string {
	d := time.Duration(missing / limit * float64(minute))
	return d.Round(time.Millisecond).String()
}

// snapshot returns each key's served calls and tokens now.
func (v *poolVendor) snapshot() map[string][2]int64 {
	m := map[string][2]int64{}
	for name, k := range v.keys {
		m[name] = [2]int64{k.served.Load(), k.tokens.Load()}
	}
	return m
}
