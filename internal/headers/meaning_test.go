package headers

import (
	"net/http"
	"testing"
	"time"
)

func TestThrottled(t *testing.T) {
	none := &Signals{}
	wait := &Signals{RetryAfter: time.Second, HasRetryAfter: true}
	empty := &Signals{Quotas: []Quota{{Family: FamilyXRateLimit, Limit: 60, Remaining: 0, Reset: 30 * time.Second, Window: -1}}}
	for _, c := range []struct {
		status int
		sig    *Signals
		want   bool
	}{
		{http.StatusTooManyRequests, none, true},
		{http.StatusForbidden, none, false}, // a plain 403 is not about the pace
		{http.StatusForbidden, wait, true},
		{http.StatusForbidden, empty, true},
		{http.StatusServiceUnavailable, none, false},
		{http.StatusServiceUnavailable, wait, true},
		{StatusOverloaded, wait, true},
		{http.StatusOK, wait, false},
	} {
		if got := c.sig.Throttled(c.status); got != c.want {
			t.Errorf("Throttled(%d) with %+v = %v, want %v", c.status, *c.sig, got, c.want)
		}
	}
	if d, ok := empty.ServerWait(http.StatusTooManyRequests); !ok || d != 30*time.Second {
		t.Errorf("ServerWait of an exhausted window = %v, %v; want its reset", d, ok)
	}
	if _, ok := empty.ServerWait(http.StatusServiceUnavailable); ok {
		t.Error("a 503 waits only on Retry-After")
	}
}

func TestCause(t *testing.T) {
	sig := &Signals{Quotas: []Quota{{Family: FamilyOpenAI, Name: "tokens", Limit: 100, Remaining: 0, Reset: 10 * time.Second, Window: -1}}}
	if got, want := sig.Cause(429, "api.example.com", 100*time.Millisecond), `429 from api.example.com: openai "tokens" exhausted, next unit in 100ms`; got != want {
		t.Errorf("Cause = %q, want %q", got, want)
	}
	if got, want := (&Signals{}).Cause(429, "h", time.Second), "429 from h: no usable wait, back-off 1s"; got != want {
		t.Errorf("Cause = %q, want %q", got, want)
	}
	capped := &Signals{RetryAfter: time.Minute, HasRetryAfter: true, Capped: true}
	if got, want := capped.Cause(503, "h", time.Minute), "503 from h: Retry-After 1m0s (capped)"; got != want {
		t.Errorf("Cause = %q, want %q", got, want)
	}
}

func TestRefusedLevel(t *testing.T) {
	all := func(*Quota) bool { return true }
	sig := &Signals{Quotas: []Quota{{Family: FamilyOpenAI, Name: "requests", Remaining: 2}}}
	if n, holds := sig.RefusedLevel(5, all); n != 2 || holds {
		t.Errorf("RefusedLevel(5) with 2 left = %d, %v; want 2, false", n, holds)
	}
	if _, holds := sig.RefusedLevel(1, all); !holds {
		t.Error("a quota with 2 left holds a call of 1")
	}
	if n, holds := (&Signals{}).RefusedLevel(3, all); n != 3 || holds {
		t.Errorf("RefusedLevel(3) without quotas = %d, %v; want 3, false", n, holds)
	}
}
