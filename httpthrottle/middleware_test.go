package httpthrottle_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

func serve(h http.Handler, method, target string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	return w
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

func TestLimitHandler(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	// 2 at once, one more every 1.5s.
	l := newLimiter(t, fc, 2, throttle.Per(2, 3*time.Second))
	h := httpthrottle.Handler(ok, httpthrottle.Shared(l))
	wantPolicy := `"requests";q=2;w=3`
	for i, want := range []struct {
		status     int
		rateLimit  string
		retryAfter string
	}{
		{200, `"requests";r=1;t=2`, ""},  // full again in 1.5s, rounded up
		{200, `"requests";r=0;t=3`, ""},  // 3s
		{429, `"requests";r=0;t=3`, "2"}, // 1.5s to the next, rounded up
	} {
		w := serve(h, http.MethodGet, "/")
		if w.Code != want.status {
			t.Errorf("request %d: status %d, want %d", i+1, w.Code, want.status)
		}
		if got := w.Header().Get("Ratelimit-Policy"); got != wantPolicy {
			t.Errorf("request %d: RateLimit-Policy %q, want %q", i+1, got, wantPolicy)
		}
		if got := w.Header().Get("Ratelimit"); got != want.rateLimit {
			t.Errorf("request %d: RateLimit %q, want %q", i+1, got, want.rateLimit)
		}
		if got := w.Header().Get("Retry-After"); got != want.retryAfter {
			t.Errorf("request %d: Retry-After %q, want %q", i+1, got, want.retryAfter)
		}
	}
	// A client that honours Retry-After: 2 is admitted.
	fc.Advance(2 * time.Second)
	if w := serve(h, http.MethodGet, "/"); w.Code != 200 {
		t.Errorf("after Retry-After: status %d, want 200", w.Code)
	}
}

func TestLimitHandlerErrors(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	l := newLimiter(t, fc, 2, throttle.Per(2, time.Second))
	errPick := errors.New("pick failed")
	h := httpthrottle.Handler(ok, httpthrottle.PickFunc(func(r *http.Request) (throttle.Gate, error) {
		switch r.URL.Path {
		case "/nogate":
			return nil, nil
		case "/fail":
			return nil, errPick
		}
		return l, nil
	}), httpthrottle.WithCost(func(r *http.Request, _ throttle.Gate) ([]int64, error) {
		switch r.URL.Path {
		case "/big":
			return []int64{3}, nil
		case "/zero":
			return []int64{0}, nil
		case "/badcost":
			return nil, errors.New("bad cost")
		}
		return []int64{1}, nil
	}))
	for _, tt := range []struct {
		path   string
		status int
	}{{"/nogate", 500}, {"/fail", 500}, {"/big", 413}, {"/zero", 200}, {"/badcost", 400}} {
		if w := serve(h, http.MethodGet, tt.path); w.Code != tt.status {
			t.Errorf("%s: status %d, want %d", tt.path, w.Code, tt.status)
		}
	}
	if lvl := bucketsOf(l)[0].Status().Level; lvl != 2 {
		t.Errorf("level %v, want 2: none of these spent anything", lvl)
	}
}

func TestLimitHandlerPermitAndHooks(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	l := newLimiter(t, fc, 10, throttle.Per(10, time.Minute))
	settled := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := httpthrottle.RequestPermit(w)
		if p == nil {
			t.Error("no permit in the request")
			return
		}
		if err := p.Settle(8); err != nil {
			t.Error(err)
		}
	})
	var seen []throttle.LimitStatus
	var waited time.Duration
	h := httpthrottle.Handler(settled, httpthrottle.Shared(l),
		httpthrottle.WithCost(func(*http.Request, throttle.Gate) ([]int64, error) { return []int64{2}, nil }),
		httpthrottle.WithQuotaHeaders(func(h http.Header, st []throttle.LimitStatus) {
			seen = st
			h.Set("X-Left", "yes")
		}),
		httpthrottle.WithRejected(func(w http.ResponseWriter, r *http.Request, wait time.Duration) {
			waited = wait
			w.WriteHeader(http.StatusTeapot)
		}))
	w := serve(h, http.MethodGet, "/")
	if w.Code != 200 || w.Header().Get("X-Left") != "yes" || w.Header().Get("Ratelimit") != "" {
		t.Errorf("status %d, header %v", w.Code, w.Header())
	}
	want := throttle.LimitStatus{Name: "requests", Capacity: 10, Rate: throttle.Per(10, time.Minute), Remaining: 8, Reset: 12 * time.Second, Level: 8}
	if len(seen) != 1 || seen[0] != want {
		t.Errorf("status %+v, want %+v", seen, want)
	}
	// Settled to 8: 10-8 = 2 left.
	if lvl := bucketsOf(l)[0].Status().Level; lvl != 2 {
		t.Errorf("level %v, want 2", lvl)
	}
	// Takes the last 2, settles to 8: 6 in debt, so the next needs 8
	// tokens, 48s at 10 a minute.
	serve(h, http.MethodGet, "/")
	if w := serve(h, http.MethodGet, "/"); w.Code != http.StatusTeapot || waited != 48*time.Second {
		t.Errorf("status %d after a wait of %v, want 418 and 48s", w.Code, waited)
	}
	if httpthrottle.RequestPermit(httptest.NewRecorder()) != nil {
		t.Error("a permit outside the middleware")
	}
}

func TestWriteIETF(t *testing.T) {
	tests := []struct {
		rate   throttle.Rate
		policy string
	}{
		{throttle.Per(500, time.Minute), `"default";q=500;w=60`},
		{throttle.Per(1, 100*time.Millisecond), `"default";q=10;w=1`},
		{throttle.Per(3, 1500*time.Millisecond), `"default";q=4;w=2`},
		{throttle.Per(0, time.Hour), `"default";q=0;w=3600`},
	}
	for _, tt := range tests {
		h := http.Header{}
		httpthrottle.WriteIETF(h, []throttle.LimitStatus{{Rate: tt.rate, Remaining: 1, Reset: 1500 * time.Millisecond}})
		if got := h.Get("Ratelimit-Policy"); got != tt.policy {
			t.Errorf("%v: RateLimit-Policy %q, want %q", tt.rate, got, tt.policy)
		}
		if got := h.Get("Ratelimit"); got != `"default";r=1;t=2` {
			t.Errorf("%v: RateLimit %q", tt.rate, got)
		}
	}
}

// TestWriteIETFUnit: a status's unit is written as qu, so that a client
// reading the policy knows what it counts; requests, the default, is not.
func TestWriteIETFUnit(t *testing.T) {
	h := http.Header{}
	httpthrottle.WriteIETF(h, []throttle.LimitStatus{
		{Name: "bytes", Unit: "content-bytes", Rate: throttle.Per(1000, time.Second), Remaining: 10},
		{Name: "calls", Unit: "requests", Rate: throttle.Per(5, time.Second), Remaining: 1},
	})
	want := []string{`"bytes";q=1000;qu="content-bytes";w=1`, `"calls";q=5;w=1`}
	if got := h.Values("Ratelimit-Policy"); !slices.Equal(got, want) {
		t.Errorf("RateLimit-Policy %q, want %q", got, want)
	}
}
