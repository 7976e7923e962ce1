package browsertest

import (
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/pool"
	"github.com/throttlekit/throttle/statuspage"
)

var poolShot = flag.String("pool-screenshot", "", "write the screenshot of TestPoolInChromium's page to this file (default: the test's temporary directory)")

// TestPoolInChromium runs a load through a Transport over a pool of three
// API keys on a fake clock, with the page open in Chromium: key b's
// account is out of credit (OpenAI's insufficient_quota), which
// quarantines it, and key c is refused now and then with a Retry-After.
// At each step the pool's row is the pool's Status at the instant the
// page's data was read, each member's row is its own Gate's Status, and
// the quarantined member shows a pause until the quarantine's end, caused
// by the pool, with nothing left.
func TestPoolInChromium(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	page, err := statuspage.New(statuspage.WithClock(clk), statuspage.WithRefresh(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer page.Close()
	api := keysAPI(t)
	pl, tr := keyPool(t, clk, api.URL, "a", "b", "c")
	page.RegisterPool("keys", pl)
	mux := http.NewServeMux()
	mux.Handle("/debug/throttle/", page)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := browse(t, srv.URL+"/debug/throttle/", 1400)

	sawQuarantine, sawPause := false, false
	for step := range 6 {
		for range 4 {
			cctx, cc := clockwork.WithTimeout(t.Context(), clk, 10*time.Millisecond)
			r, _ := http.NewRequestWithContext(cctx, http.MethodPost, api.URL+"/v1/chat/completions", nil)
			if resp, err := tr.RoundTrip(r); err == nil {
				resp.Body.Close()
			}
			cc()
		}
		tick(t, ctx, clk)
		got, now := rows(t, ctx), clk.Now()
		if len(got) != 4*2 {
			t.Fatalf("step %d: rows %+v, want the pool's and its three members', two limits each", step, got)
		}
		sameAsStatus(t, got, "keys", pl.Status(nil), now)
		for _, m := range pl.Members() {
			want := m.Gate.(throttle.Meter).Status(nil)
			if until := pl.Quarantined(m.Name); !until.IsZero() {
				quarantined(want, until)
				sawQuarantine = sameAsStatus(t, got, "keys/"+m.Name, want, now) || sawQuarantine
			} else {
				sawPause = sameAsStatus(t, got, "keys/"+m.Name, want, now) || sawPause
			}
		}
	}
	if !sawQuarantine || !sawPause {
		t.Errorf("shown: a quarantine with its cause %v, a member's pause with its cause %v; want both", sawQuarantine, sawPause)
	}
	save(t, ctx, *poolShot, "pool.png")
}

// quarantined makes sts, a member's Status, what the page shows of it
// while its pool keeps it out until until: nothing left, and paused till
// then by the pool unless its own pause lasts longer.
func quarantined(sts []throttle.LimitStatus, until time.Time) {
	for i := range sts {
		sts[i].Remaining = 0
		if until.After(sts[i].Paused) {
			sts[i].Paused, sts[i].Cause = until, "quarantined by the pool"
		}
	}
}

// keysAPI is a server that answers by API key: b's account is out of
// credit (a 429 with OpenAI's insufficient_quota), c is refused every
// third call with a Retry-After of 2 seconds, and a is served.
func keysAPI(t *testing.T) *httptest.Server {
	var cCalls atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); {
		case key == "b":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`)
		case key == "c" && cCalls.Add(1)%3 == 0:
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(api.Close)
	return api
}

// keyPool is a pool of one Limiter per key (requests and tokens), under a
// Transport that sends each request with its member's key and does not
// retry a refusal.
func keyPool(t *testing.T, clk clockwork.Clock, url string, keys ...string) (*pool.Pool, *httpthrottle.Transport) {
	t.Helper()
	var ms []pool.Member
	routes := map[string]func(*http.Request){}
	for _, k := range keys {
		req, _ := throttle.New(6, throttle.Per(3, time.Second), throttle.WithClock(clk), throttle.WithName("requests"))
		tok, _ := throttle.New(4000, throttle.Per(1000, time.Second), throttle.WithClock(clk), throttle.WithName("tokens"))
		lim, _ := throttle.NewLimiter(req, tok)
		ms = append(ms, pool.Member{Name: k, Gate: lim})
		r, err := httpthrottle.RouteTo(url, url, http.Header{"Authorization": {"Bearer " + k}})
		if err != nil {
			t.Fatal(err)
		}
		routes[k] = r
	}
	pl, err := pool.New(ms, pool.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	base := &http.Transport{}
	tr, err := httpthrottle.NewTransport(base, httpthrottle.Shared(pl), httpthrottle.WithRoutes(routes), httpthrottle.WithRetries(0),
		httpthrottle.WithCost(func(*http.Request, throttle.Gate) ([]int64, error) { return []int64{1, 600}, nil }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(base.CloseIdleConnections)
	return pl, tr
}
