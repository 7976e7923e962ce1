package hoststore_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/hoststore"
	"github.com/throttlekit/throttle/httpthrottle"
)

// TestTransportTakesAndLowers puts a host's Limiter under the HTTP
// Transport: each call takes its token from the file, and a server's
// count of what is left lowers the level every process of the host reads.
func TestTransportTakesAndLowers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/lower" {
			return
		}
		w.Header().Set("X-Ratelimit-Limit-Requests", "10")
		w.Header().Set("X-Ratelimit-Remaining-Requests", "2")
		w.Header().Set("X-Ratelimit-Reset-Requests", "1m")
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "quota")
	l, err := hoststore.NewLimiter(open(t, path), "requests", 10, throttle.Per(10, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := httpthrottle.NewTransport(srv.Client().Transport, httpthrottle.Shared(l))
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: tr}
	defer c.CloseIdleConnections()
	for range 3 {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := l.Status(nil)[0].Remaining; got != 7 {
		t.Errorf("after 3 calls, %d left, want 7", got)
	}
	resp, err := c.Get(srv.URL + "/lower")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	other, err := hoststore.NewLimiter(open(t, path), "requests", 10, throttle.Per(10, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := other.Status(nil)[0].Remaining; got > 2 {
		t.Errorf("after a server said 2 were left, another process reads %d left", got)
	}
}
