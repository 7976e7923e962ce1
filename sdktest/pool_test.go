package sdktest_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/pool"
)

// twoKeyVendor refuses key a with a 429 and Retry-After: 20 and answers
// key b, in the shape of the SDK's vendor (OpenAI's chat completion or
// Anthropic's message), recording the key of each attempt.
type twoKeyVendor struct {
	mu   sync.Mutex
	keys []string
}

func (v *twoKeyVendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	v.mu.Lock()
	v.keys = append(v.keys, key)
	v.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if key == "a" {
		w.Header().Set("Retry-After", "20")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/messages") {
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
		return
	}
	io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
}

// TestPoolSDKRetryMovesToAnotherKey: with each Stainless SDK at its
// defaults (it retries itself), a call over a pool of two keys whose
// first, a, is refused with Retry-After: 20 succeeds on b at the SDK's
// first retry, in well under the 20 s the refused key asks: the Transport
// tells the SDK the pool's wait (Retry-After-Ms), not the member's.
// Real clock, bounded by the call's 10 s deadline.
func TestPoolSDKRetryMovesToAnotherKey(t *testing.T) {
	for name, sdk := range stainless {
		t.Run(name, func(t *testing.T) {
			v := &twoKeyVendor{}
			srv := httptest.NewServer(v)
			defer srv.Close()
			var ms []pool.Member
			routes := map[string]func(*http.Request){}
			for i, k := range []string{"a", "b"} {
				b, err := throttle.New(60, throttle.Per(60, time.Minute), throttle.WithName("requests"))
				if err != nil {
					t.Fatal(err)
				}
				l, _ := throttle.NewLimiter(b)
				ms = append(ms, pool.Member{Name: k, Gate: l, Tier: i})
				routes[k] = func(r *http.Request) {
					r.Header.Set("Authorization", "Bearer "+k)
					r.Header.Set("X-Api-Key", k)
				}
			}
			p := must(pool.New(ms))
			tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(p), httpthrottle.WithRoutes(routes)))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			if err := sdk(srv.URL)(ctx, &http.Client{Transport: tr}, "Say ok.", 10, false); err != nil {
				t.Fatalf("the call failed: %v", err)
			}
			took := time.Since(start)
			v.mu.Lock()
			keys := strings.Join(v.keys, ",")
			v.mu.Unlock()
			t.Logf("%s: keys %s in %v", name, keys, took.Round(time.Millisecond))
			if keys != "a,b" {
				t.Errorf("keys used %s, want a (refused), then b", keys)
			}
			if took > 5*time.Second {
				t.Errorf("the call took %v: its retry waited the refused key's pause", took)
			}
		})
	}
}
