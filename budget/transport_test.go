package budget_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

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
