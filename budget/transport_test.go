package budget_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/budget"
	"github.com/throttlekit/throttle/httpthrottle"
)

// TestTransportStopsCallsOnceSpent puts a Budget under the HTTP Transport
// as any Gate is: once the day's calls are spent, no request reaches the
// server and the client's error says which budget and when it resets.
func TestTransportStopsCallsOnceSpent(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served.Add(1) }))
	defer srv.Close()
	b, _ := newBudget(t, 3)
	tr, err := httpthrottle.NewTransport(srv.Client().Transport, httpthrottle.Shared(b))
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: tr}
	defer c.CloseIdleConnections()
	for i := range 5 {
		resp, err := c.Get(srv.URL)
		if i < 3 {
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			resp.Body.Close()
			continue
		}
		var se *budget.SpentError
		if !errors.As(err, &se) || se.Budget != "opus-daily" || se.Resets.IsZero() {
			t.Errorf("call %d past the budget: %v, want a *SpentError", i, err)
		}
	}
	if n := served.Load(); n != 3 {
		t.Errorf("the server saw %d calls, want the budget's 3", n)
	}
}

// TestTransportBudgetPerTenant: a budget per tenant through the pick
// machinery, as PerKey gives a Limiter per key: the Picker returns
// the tenant's Budget (For), each tenant spends its own, and a spent one
// stops only its own calls.
func TestTransportBudgetPerTenant(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served.Add(1) }))
	defer srv.Close()
	b, _ := newBudget(t, 2)
	tenant := httpthrottle.HeaderKey("X-Tenant")
	tr, err := httpthrottle.NewTransport(srv.Client().Transport, httpthrottle.PickFunc(func(r *http.Request) (throttle.Gate, error) {
		return b.For(tenant(r)), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: tr}
	defer c.CloseIdleConnections()
	get := func(who string) error {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("X-Tenant", who)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for i, who := range []string{"acme", "acme", "globex"} {
		if err := get(who); err != nil {
			t.Fatalf("call %d of %s: %v", i, who, err)
		}
	}
	var se *budget.SpentError
	if err := get("acme"); !errors.As(err, &se) || se.Key != "acme" {
		t.Fatalf("acme's third call: %v, want acme's SpentError", err)
	}
	if err := get("globex"); err != nil {
		t.Fatalf("globex's second call: %v", err)
	}
	if n := served.Load(); n != 4 {
		t.Errorf("the server saw %d calls, want 2 of each tenant", n)
	}
}
