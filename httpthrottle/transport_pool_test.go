package httpthrottle_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/pool"
)

// keyVendor is a vendor whose API keys each have a path of their own
// (/<key>/v1/...) and answer as refuse says, recording which key each
// request used.
type keyVendor struct {
	mu     sync.Mutex
	calls  []string // the key of each request, in order
	refuse func(key string, n int) (status int, header http.Header, body string)
}

func (v *keyVendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !strings.HasPrefix(r.URL.Path, "/"+key+"/v1/") {
		http.Error(w, "path "+r.URL.Path+" is not key "+key+"'s", http.StatusBadRequest)
		return
	}
	v.mu.Lock()
	n := 0
	for _, k := range v.calls {
		if k == key {
			n++
		}
	}
	v.calls = append(v.calls, key)
	v.mu.Unlock()
	if v.refuse != nil {
		if status, h, body := v.refuse(key, n); status != 0 {
			for k, vs := range h {
				w.Header()[k] = vs
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, body)
			return
		}
	}
	io.WriteString(w, `{"ok":true}`)
}

func (v *keyVendor) keys() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.calls...)
}

// keyPool is a pool of the named keys, each 60 requests a minute on clk,
// and a Transport over it that routes each to its key's path and
// credential on srv.
func keyPool(t *testing.T, clk clockwork.Clock, srv *httptest.Server, names ...string) (*pool.Pool, *httpthrottle.Transport) {
	t.Helper()
	var ms []pool.Member
	routes := map[string]func(*http.Request){}
	for _, n := range names {
		ms = append(ms, pool.Member{Name: n, Gate: newLimiter(t, clk, 60, throttle.Per(60, time.Minute))})
		r, err := httpthrottle.RouteTo(srv.URL+"/v1", srv.URL+"/"+n+"/v1", http.Header{"Authorization": {"Bearer " + n}})
		if err != nil {
			t.Fatal(err)
		}
		routes[n] = r
	}
	p, err := pool.New(ms)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(p), httpthrottle.WithRoutes(routes),
		httpthrottle.WithBackOff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return p, tr
}

func poolGet(t *testing.T, tr http.RoundTripper, url string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if req.Header.Get("Authorization") != "" || !strings.HasPrefix(req.URL.Path, "/v1/") {
		t.Fatalf("the caller's request was rewritten: %s %v", req.URL, req.Header)
	}
	return resp.StatusCode
}

func TestPoolRoutesEachRequestThroughItsMember(t *testing.T) {
	v := &keyVendor{}
	srv := httptest.NewServer(v)
	defer srv.Close()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	_, tr := keyPool(t, clk, srv, "a", "b", "c")
	for range 6 {
		if s := poolGet(t, tr, srv.URL+"/v1/chat/completions"); s != 200 {
			t.Fatalf("status %d", s)
		}
	}
	if got := strings.Join(v.keys(), ","); got != "a,b,c,a,b,c" {
		t.Fatalf("keys used %s, want a,b,c,a,b,c", got)
	}
}

// roundTripDriven runs one GET on tr, advancing clk a millisecond at a
// time while it waits out the back-off before a retry.
func roundTripDriven(t *testing.T, clk *clockwork.FakeClock, tr http.RoundTripper, url string) int {
	t.Helper()
	done := make(chan int, 1)
	go func() { done <- poolGet(t, tr, url) }()
	for i := 0; ; i++ {
		select {
		case s := <-done:
			return s
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		if clk.BlockUntilContext(ctx, 1) == nil {
			clk.Advance(time.Millisecond)
		}
		cancel()
		if i > 2000 {
			t.Fatal("the request did not end")
		}
	}
}

// A 429 pauses its member alone; the retry moves to another member at
// once rather than waiting out the refused member's Retry-After.
func TestPoolRetryMovesToAnotherMember(t *testing.T) {
	v := &keyVendor{refuse: func(key string, n int) (int, http.Header, string) {
		if key == "a" && n == 0 {
			return 429, http.Header{"Retry-After": {"20"}}, `{"error":{"type":"requests","code":"rate_limit_exceeded"}}`
		}
		return 0, nil, ""
	}}
	srv := httptest.NewServer(v)
	defer srv.Close()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	p, tr := keyPool(t, clk, srv, "a", "b")
	start := clk.Now()
	if s := roundTripDriven(t, clk, tr, srv.URL+"/v1/x"); s != 200 {
		t.Fatalf("status %d, want the retry's 200", s)
	}
	if waited := clk.Since(start); waited >= 20*time.Second {
		t.Fatalf("the retry waited %v: the refused member's pause", waited)
	}
	if got := strings.Join(v.keys(), ","); got != "a,b" {
		t.Fatalf("keys used %s, want a then b", got)
	}
	// a is paused, not quarantined: calls avoid it until its pause ends.
	if !p.Quarantined("a").IsZero() {
		t.Fatal("a 429 with a short Retry-After quarantined its member")
	}
	for range 3 {
		poolGet(t, tr, srv.URL+"/v1/x")
	}
	if got := strings.Join(v.keys(), ","); got != "a,b,b,b,b" {
		t.Fatalf("keys used %s, want b while a is paused", got)
	}
}

// One insufficient_quota answer takes its member out until the quarantine
// ends; the call itself is served by another member.
func TestPoolQuarantinesOnBilling(t *testing.T) {
	v := &keyVendor{refuse: func(key string, n int) (int, http.Header, string) {
		if key == "a" {
			return 429, nil, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`
		}
		return 0, nil, ""
	}}
	srv := httptest.NewServer(v)
	defer srv.Close()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	p, tr := keyPool(t, clk, srv, "a", "b")
	start := clk.Now() // the refusal's instant: the clock moves only for the retry's back-off
	if s := roundTripDriven(t, clk, tr, srv.URL+"/v1/x"); s != 200 {
		t.Fatalf("status %d, want 200 from b", s)
	}
	until := p.Quarantined("a")
	if until.Sub(start) != p.DefaultQuarantine() {
		t.Fatalf("a quarantined until %v after insufficient_quota at %v, want the pool's default quarantine later", until, start)
	}
	for range 20 {
		poolGet(t, tr, srv.URL+"/v1/x")
	}
	if got := strings.Count(strings.Join(v.keys(), ","), "a"); got != 1 {
		t.Fatalf("%d calls reached a, want the one", got)
	}
	// a still refuses: the first call after the quarantine tries it (it
	// has the most left), is refused once more and moves to b.
	clk.Advance(until.Sub(clk.Now()))
	roundTripDriven(t, clk, tr, srv.URL+"/v1/x")
	if got := v.keys(); strings.Join(got[len(got)-2:], ",") != "a,b" {
		t.Fatalf("the call after the quarantine went to %v, want a then b", got[len(got)-2:])
	}
}

// A Retry-After past the MaxPause quarantines its member until the end
// the server named.
func TestPoolQuarantinesOnLongRetryAfter(t *testing.T) {
	v := &keyVendor{refuse: func(key string, n int) (int, http.Header, string) {
		if key == "a" {
			return 429, http.Header{"Retry-After": {"7200"}}, `{}`
		}
		return 0, nil, ""
	}}
	srv := httptest.NewServer(v)
	defer srv.Close()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	p, tr := keyPool(t, clk, srv, "a", "b")
	start := clk.Now()
	if s := roundTripDriven(t, clk, tr, srv.URL+"/v1/x"); s != 200 {
		t.Fatalf("status %d, want 200 from b", s)
	}
	if got, want := p.Quarantined("a"), start.Add(2*time.Hour); got.Sub(want).Abs() > time.Second {
		t.Fatalf("a quarantined until %v, want %v", got, want)
	}
}

// Gemini's per-day QuotaFailure quarantines its member until the next
// midnight in Pacific time, whatever its retryDelay says.
func TestPoolQuarantinesOnGeminiPerDay(t *testing.T) {
	v := &keyVendor{refuse: func(key string, n int) (int, http.Header, string) {
		if key == "a" {
			return 429, nil, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[
				{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},
				{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"43s"}]}}`
		}
		return 0, nil, ""
	}}
	srv := httptest.NewServer(v)
	defer srv.Close()
	// 12:00 UTC is 04:00 in Los Angeles in December (PST, UTC-8).
	clk := clockwork.NewFakeClockAt(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	p, tr := keyPool(t, clk, srv, "a", "b")
	if s := roundTripDriven(t, clk, tr, srv.URL+"/v1/x"); s != 200 {
		t.Fatalf("status %d, want 200 from b", s)
	}
	if got, want := p.Quarantined("a"), time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("a quarantined until %v, want %v (midnight in Pacific time)", got, want)
	}
	if got := strings.Join(v.keys(), ","); got != "a,b" {
		t.Fatalf("keys used %s, want a then b", got)
	}
}

// TestLimitHandlerOverPoolAnswersItsSum: a server that admits its clients
// through a pool answers with the IETF RateLimit fields of the pool's
// summed quota, as it does for one Limiter.
func TestLimitHandlerOverPoolAnswersItsSum(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	var ms []pool.Member
	for _, name := range []string{"a", "b"} {
		b, err := throttle.New(10, throttle.Per(10, time.Second), throttle.WithClock(clk), throttle.WithName("requests"))
		if err != nil {
			t.Fatal(err)
		}
		l, _ := throttle.NewLimiter(b)
		ms = append(ms, pool.Member{Name: name, Gate: l})
	}
	p, err := pool.New(ms)
	if err != nil {
		t.Fatal(err)
	}
	h := httpthrottle.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), httpthrottle.Shared(p))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if got := rec.Header().Get("RateLimit-Policy"); got != `"requests";q=20;w=1` {
		t.Errorf("RateLimit-Policy %q, want the pool's 20 a second", got)
	}
	if got := rec.Header().Get("RateLimit"); !strings.HasPrefix(got, `"requests";r=19;`) {
		t.Errorf("RateLimit %q, want 19 left of the pool's 20", got)
	}
}

// An SDK that retries itself (X-Stainless-Retry-Count) gets the refused
// member's 429 back, as every refusal, but told to retry in the pool's
// wait (Retry-After-Ms) rather than the member's Retry-After: its retry
// then goes to another member at once.
func TestPoolTellsSDKRetryTheNextMember(t *testing.T) {
	v := &keyVendor{refuse: func(key string, n int) (int, http.Header, string) {
		if key == "a" {
			return 429, http.Header{"Retry-After": {"20"}}, `{"error":{"type":"requests","code":"rate_limit_exceeded"}}`
		}
		return 0, nil, ""
	}}
	srv := httptest.NewServer(v)
	defer srv.Close()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	_, tr := keyPool(t, clk, srv, "a", "b")
	sdkGet := func() *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/x", nil)
		req.Header.Set("X-Stainless-Retry-Count", "0")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := sdkGet()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After-Ms") != "1" || resp.Header.Get("Retry-After") != "20" {
		t.Fatalf("status %d, Retry-After-Ms %q, Retry-After %q; want the 429, with b's wait in ms and the server's own",
			resp.StatusCode, resp.Header.Get("Retry-After-Ms"), resp.Header.Get("Retry-After"))
	}
	if resp := sdkGet(); resp.StatusCode != 200 {
		t.Fatalf("the SDK's retry: status %d, want b's 200", resp.StatusCode)
	}
	if got := strings.Join(v.keys(), ","); got != "a,b" {
		t.Fatalf("keys used %s, want a then b", got)
	}
}
