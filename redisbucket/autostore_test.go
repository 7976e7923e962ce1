package redisbucket_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
	"github.com/throttlekit/throttle/redisbucket"
	"github.com/throttlekit/throttle/redisbucket/internal/redistest"
)

func TestAutoStoreCompareAndSet(t *testing.T) {
	be := redistest.New(t)
	c := be.Client()
	defer c.Close()
	s := redisbucket.NewAutoStore(c, be.Prefix)
	ctx := context.Background()
	data, v, _, err := s.Load(ctx, "api.example.com", "p0", time.Minute)
	if err != nil || v != 0 || data != nil {
		t.Fatalf("a quota never stored: %q, version %d, %v", data, v, err)
	}
	if ok, err := s.Store(ctx, "api.example.com", 0, []byte(`{"a":1}`), time.Minute); !ok || err != nil {
		t.Fatalf("first store: %v, %v", ok, err)
	}
	if ok, err := s.Store(ctx, "api.example.com", 0, []byte(`{"a":2}`), time.Minute); ok || err != nil {
		t.Fatalf("a store on a stale version: %v, %v; want refused", ok, err)
	}
	data, v, _, err = s.Load(ctx, "api.example.com", "p0", time.Minute)
	if err != nil || v != 1 || string(data) != `{"a":1}` {
		t.Fatalf("after one store: %q, version %d, %v", data, v, err)
	}
	for i, m := range []string{"p1", "p2", "p1"} {
		_, _, n, err := s.Load(ctx, "api.example.com", m, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if want := min(i+2, 3); n != want {
			t.Errorf("join %d (%s): %d members; want %d", i, m, n, want)
		}
	}
}

// TestAutoStoreFleet: two auto.Limiters, as two processes, share a Redis
// store: the second knows the limit the first learned before it sends
// anything, and a bare 429 the first gets pauses the second at its next
// sync.
func TestAutoStoreFleet(t *testing.T) {
	be := redistest.New(t)
	c := be.Client()
	defer c.Close()
	refuse := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("RateLimit-Policy", `"default";q=50;w=1`)
		w.Header().Set("RateLimit", `"default";r=49;t=1`)
	}))
	defer srv.Close()
	fc := clockwork.NewFakeClockAt(time.Now())
	mk := func() (*auto.Limiter, *http.Client) {
		a := must(auto.New(auto.Clock(fc), auto.Fleet(redisbucket.NewAutoStore(c, be.Prefix))))
		return a, &http.Client{Transport: must(httpthrottle.NewTransport(nil, a, httpthrottle.WithRetries(0)))}
	}
	a, ca := mk()
	b, _ := mk()
	defer srv.Client().CloseIdleConnections()
	call := func(c *http.Client) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/x", nil)
		req.Header.Set("Authorization", "Bearer sk-fleet")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	call(ca)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/x", nil)
	req.Header.Set("Authorization", "Bearer sk-fleet")
	l, err := b.Pick(req)
	if err != nil {
		t.Fatal(err)
	}
	st := b.Stats()
	if len(st) != 1 || len(st[0].Limits) != 1 || !st[0].Limits[0].Learned || st[0].Limits[0].Quota != 50 {
		t.Fatalf("the second process before any response: %+v; want the 50/s the first learned", st)
	}
	if a.FleetErrors() != 0 || b.FleetErrors() != 0 {
		t.Fatalf("store errors: %d, %d", a.FleetErrors(), b.FleetErrors())
	}
	// The first is refused: the second keeps the fleet's pause from its
	// next sync, before its next request is sent.
	refuse = true
	if got := call(ca); got != http.StatusTooManyRequests {
		t.Fatalf("status %d", got)
	}
	refuse = false
	fc.Advance(50 * time.Millisecond)
	if _, err := b.Pick(req); err != nil {
		t.Fatal(err)
	}
	var u time.Time
	for _, st := range l.(throttle.Meter).Status(nil) {
		if st.Name == "requests" {
			u = st.Paused
		}
	}
	if !u.After(fc.Now()) {
		t.Errorf("the second process after the first's 429: paused until %v (now %v); want paused", u, fc.Now())
	}
}

// An AutoStore is what auto.Fleet takes; the package itself
// does not import httpthrottle, so a program sharing a bucket in Redis does
// not link the HTTP layer.
var _ auto.Store = (*redisbucket.AutoStore)(nil)
