package httpthrottle_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

func TestCostCountTransport(t *testing.T) {
	l, req, tok := costCountLimiter(clockwork.NewFakeClock())
	sent := 0
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent++
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	})
	// All zeros would be free if the count went unchecked: the request would
	// go out under no limit at all.
	for _, costs := range [][]int64{{1}, {0}, {1, 1, 1}} {
		tr := must(httpthrottle.NewTransport(base, httpthrottle.Shared(l), httpthrottle.WithCost(func(*http.Request, throttle.Gate) ([]int64, error) {
			return costs, nil
		})))
		r := httptest.NewRequest(http.MethodGet, "http://vendor.test/", nil)
		resp, err := tr.RoundTrip(r)
		if resp != nil {
			resp.Body.Close()
		}
		if !errors.Is(err, throttle.ErrInvalidCost) || !strings.Contains(err.Error(), "for 2 buckets") {
			t.Errorf("costs %v: RoundTrip err = %v, want ErrCostCount", costs, err)
		}
	}
	if sent != 0 {
		t.Fatalf("%d requests sent with the wrong number of costs", sent)
	}
	if req.Status().Level != 3 || tok.Status().Level != 100 {
		t.Fatalf("failed requests spent: levels %v, %v", req.Status().Level, tok.Status().Level)
	}
}

func TestCostCountLimitHandler(t *testing.T) {
	l, req, _ := costCountLimiter(clockwork.NewFakeClock())
	served := 0
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ })
	for _, costs := range [][]int64{{1}, {0}} {
		h := httpthrottle.Handler(next, httpthrottle.Shared(l), httpthrottle.WithCost(func(*http.Request, throttle.Gate) ([]int64, error) {
			return costs, nil
		}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "got 1 cost for 2 buckets") {
			t.Errorf("costs %v: %d %q, want 500 naming the count", costs, w.Code, w.Body.String())
		}
	}
	if served != 0 || req.Status().Level != 3 {
		t.Fatalf("wrong-arity requests: %d served, requests level %v", served, req.Status().Level)
	}
}
