package httpthrottle_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
)

// TestPerKey: each API key has its own limiter, so a 429 to one key pauses
// that key only.
func TestPerKey(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	rec := newRecorder(t, fc, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") == "a" {
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	keys := throttle.NewKeyed(func(key string) []throttle.Limit {
		if key == "" {
			return nil
		}
		return []throttle.Limit{{Name: "requests", Capacity: 5, Rate: throttle.Per(5, time.Second)}}
	}, throttle.WithClock(fc))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.PerKey(keys, httpthrottle.HeaderKey("x-api-key")), httpthrottle.WithRetries(0)))
	send := func(key string) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, rec.srv.URL, nil)
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := send("a"); err != nil || code != 429 {
		t.Fatalf("key a: status %d, error %v; want 429", code, err)
	}
	la, lb := keys.Limiter("a"), keys.Limiter("b")
	if until, ok := pausedUntil(bucketsOf(la)[0]); !ok || until.Sub(epoch) != 5*time.Second {
		t.Errorf("key a paused until +%v (%v), want +5s", until.Sub(epoch), ok)
	}
	if _, ok := pausedUntil(bucketsOf(lb)[0]); ok {
		t.Error("key b paused by key a's 429")
	}
	if code, err := send("b"); err != nil || code != 200 {
		t.Errorf("key b: status %d, error %v; want 200 at once", code, err)
	}
	if _, err := send(""); !errors.Is(err, throttle.ErrInvalidOption) {
		t.Errorf("no key: error %v, want ErrInvalidLimit", err)
	}
	if rec.count() != 2 {
		t.Errorf("%d requests sent, want 2", rec.count())
	}
}

func TestKeyFuncs(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "https://api.example.com:8443/v1", nil)
	req.Header.Set("Authorization", "Bearer x")
	if got := httpthrottle.HostKey(req); got != "api.example.com:8443" {
		t.Errorf("HostKey = %q", got)
	}
	if got := httpthrottle.HeaderKey("authorization")(req); got != "Bearer x" {
		t.Errorf("HeaderKey = %q", got)
	}
	if got := httpthrottle.HeaderKey("X-Missing")(req); got != "" {
		t.Errorf("HeaderKey of a missing header = %q", got)
	}
	body := `{"model":"gpt-4o-mini","messages":[]}`
	post, _ := http.NewRequest(http.MethodPost, "https://api.example.com/v1/chat/completions", strings.NewReader(body))
	if got := llm.ModelKey(post); got != "gpt-4o-mini" {
		t.Errorf("ModelKey = %q", got)
	}
	if got := llm.ModelKey(req); got != "" {
		t.Errorf("ModelKey without a body = %q", got)
	}
}
