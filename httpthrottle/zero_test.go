package httpthrottle_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/throttlekit/throttle/httpthrottle"
)

// TestZeroValuesHTTP: the HTTP layer's nil arguments limit nothing or fail
// loudly, never with a nil dereference on first use.
func TestZeroValuesHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	t.Run("NewTransport(nil, nil)", func(t *testing.T) {
		tr := httpthrottle.NewTransport(newBase(t), nil)
		for range 3 {
			if code, err := get(&http.Client{Transport: tr}, srv.URL); code != 200 || err != nil {
				t.Fatalf("status %d, error %v; want 200 unlimited", code, err)
			}
		}
	})
	t.Run("LimitHandler", func(t *testing.T) {
		h := httpthrottle.LimitHandler(http.NotFoundHandler(), nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != http.StatusNotFound {
			t.Errorf("a nil pick: status %d, want next's 404", w.Code)
		}
		defer func() {
			if r := recover(); r == nil || r.(string) != "throttle: LimitHandler: nil next handler" {
				t.Errorf("LimitHandler(nil, …) recovered %v, want a panic that names the nil handler", r)
			}
		}()
		httpthrottle.LimitHandler(nil, nil)
	})
}
