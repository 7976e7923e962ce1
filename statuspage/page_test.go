package statuspage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/budget"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
	"github.com/throttlekit/throttle/pool"
	"github.com/throttlekit/throttle/statuspage"
)

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// jsonView is what the tests read of the page's JSON.
type jsonView struct {
	Total, Matched int
	Limiters       []struct {
		Name   string
		Limits []struct {
			Name      string
			Level     float64
			Remaining int64
			Cause     string
			Waiting   int
			PausedNs  int64     `json:"pausedNs"`
			LevelHist []float64 `json:"levelHistory"`
			SpentHist []float64 `json:"spentHistory"`
			Estimated bool      `json:"spentEstimated"`
		}
		Auto []struct {
			Key    string
			Limits []struct{ Name string }
		}
		Events []struct {
			Kind, Limit, Why, Reason string
		}
	}
}

func get(t *testing.T, h http.Handler, query string) (string, jsonView) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/throttle/?"+query, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var v jsonView
	if strings.Contains(query, "format=json") {
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("%v: %s", err, rec.Body)
		}
	}
	return rec.Body.String(), v
}

func newPage(t *testing.T, opts ...statuspage.Option) *statuspage.Page {
	t.Helper()
	p, err := statuspage.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestJSONIsStatus checks that the page shows each limit's Status at the
// moment of the request, a pause with its cause, and the refusals its
// Observer heard, explained.
func TestJSONIsStatus(t *testing.T) {
	clk := clockwork.NewFakeClockAt(epoch)
	p := newPage(t, statuspage.WithClock(clk))
	obs := p.Observer("api")
	req, _ := throttle.New(10, throttle.Per(10, time.Second), throttle.WithClock(clk), throttle.WithName("requests"), throttle.WithObserver(obs))
	tok, _ := throttle.New(1000, throttle.Per(100, time.Second), throttle.WithClock(clk), throttle.WithName("tokens"), throttle.WithObserver(obs))
	l, _ := throttle.NewLimiter(req, tok)
	p.Register("api", l)
	l.TryAcquire(7, 995)
	l.TryAcquire(1, 10) // refused: tokens binds
	until := clk.Now().Add(3 * time.Second)
	l.Observe(throttle.Event{Kind: throttle.EventPaused, Limit: "requests", Until: until, Reason: "429 from api.example.com: Retry-After 3s"})
	l.PauseUntil(until)
	clk.Advance(250 * time.Millisecond)

	_, v := get(t, p, "format=json")
	st := l.Status(nil)
	if len(v.Limiters) != 1 || len(v.Limiters[0].Limits) != 2 {
		t.Fatalf("view %+v", v)
	}
	for i, lv := range v.Limiters[0].Limits {
		if lv.Name != st[i].Name || lv.Level != st[i].Level || lv.Remaining != st[i].Remaining || lv.Cause != st[i].Cause {
			t.Errorf("limit %d shown %+v, Status %+v", i, lv, st[i])
		}
	}
	if got := v.Limiters[0].Limits[0]; got.Cause != "429 from api.example.com: Retry-After 3s" || got.PausedNs != int64(2750*time.Millisecond) {
		t.Errorf("pause shown as %+v", got)
	}
	var refused, paused bool
	for _, e := range v.Limiters[0].Events {
		refused = refused || e.Kind == "refused" && strings.Contains(e.Why, `limit "tokens"`)
		paused = paused || e.Kind == "paused" && e.Reason != ""
	}
	if !refused || !paused {
		t.Errorf("events %+v, want the refusal explained and the pause with its cause", v.Limiters[0].Events)
	}
	html, _ := get(t, p, "")
	if !strings.Contains(html, "<script>") || strings.Contains(html, "http://") && !strings.Contains(html, "http://www.w3.org/2000/svg") || strings.Contains(html, "https://") {
		t.Errorf("the page loads something from outside:\n%s", html)
	}
}

// TestBudgetOnPage checks that a budget registered on the page shows its
// spend, and its threshold alert among its events, explained.
func TestBudgetOnPage(t *testing.T) {
	clk := clockwork.NewFakeClockAt(epoch)
	p := newPage(t, statuspage.WithClock(clk))
	day, err := budget.New("day", 100, budget.Daily(time.UTC), budget.WithClock(clk), budget.WithObserver(p.Observer("day")))
	if err != nil {
		t.Fatal(err)
	}
	p.Register("day", day)
	if _, err := day.Acquire(context.Background(), 85); err != nil {
		t.Fatal(err)
	}
	_, v := get(t, p, "format=json")
	if len(v.Limiters) != 1 || len(v.Limiters[0].Limits) != 1 || v.Limiters[0].Limits[0].Remaining != 15 {
		t.Fatalf("view %+v", v)
	}
	var alert bool
	for _, e := range v.Limiters[0].Events {
		alert = alert || e.Kind == "threshold" && e.Limit == "day" && strings.HasPrefix(e.Why, "80% of 100 spent, until ")
	}
	if !alert {
		t.Errorf("events %+v, want the 80%% threshold explained", v.Limiters[0].Events)
	}
}

// TestTopAndSearch checks that among 10,000 limiters the page lists the
// most active, and finds any by name.
func TestTopAndSearch(t *testing.T) {
	clk := clockwork.NewFakeClockAt(epoch)
	p := newPage(t, statuspage.WithClock(clk), statuspage.WithTop(10))
	for i := range 10000 {
		b, _ := throttle.New(100, throttle.Per(100, time.Second), throttle.WithClock(clk), throttle.WithName("requests"))
		l, _ := throttle.NewLimiter(b)
		p.Register(fmt.Sprintf("key-%05d", i), l)
		if i%1000 == 7 {
			l.TryAcquire(int64(i/1000 + 1))
		}
	}
	statuspage.SampleNow(p)
	_, v := get(t, p, "format=json")
	if v.Total != 10000 || len(v.Limiters) != 10 {
		t.Fatalf("total %d, shown %d", v.Total, len(v.Limiters))
	}
	for i, want := range []string{"key-09007", "key-08007", "key-07007"} {
		if v.Limiters[i].Name != want {
			t.Errorf("shown %d: %s, want %s", i, v.Limiters[i].Name, want)
		}
	}
	_, v = get(t, p, "format=json&q=KEY-04321")
	if v.Matched != 1 || len(v.Limiters) != 1 || v.Limiters[0].Name != "key-04321" {
		t.Fatalf("search: %+v", v)
	}
}

// TestNoSecrets checks that a credential sent through an Auto limiter and
// a Limiter never reaches the page.
func TestNoSecrets(t *testing.T) {
	const secret = "sk-proj-0123456789abcdefSECRET"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("X-Ratelimit-Limit-Requests", "60")
		w.Header().Set("X-Ratelimit-Remaining-Requests", "0")
		w.Header().Set("X-Ratelimit-Reset-Requests", "1s")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	p := newPage(t)
	learned, err := auto.New()
	if err != nil {
		t.Fatal(err)
	}
	p.RegisterAuto("auto", learned)
	b, _ := throttle.New(10, throttle.Per(10, time.Second), throttle.WithName("requests"), throttle.WithObserver(p.Observer("shared")))
	l, _ := throttle.NewLimiter(b)
	p.Register("shared", l)
	for _, g := range []httpthrottle.Picker{learned, httpthrottle.Shared(l)} {
		tr, err := httpthrottle.NewTransport(base, g, httpthrottle.WithRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/models?api_key="+secret, nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	html, _ := get(t, p, "")
	body, v := get(t, p, "format=json")
	if len(v.Limiters) != 2 {
		t.Fatalf("view %s", body)
	}
	for _, s := range []string{html, body} {
		if strings.Contains(s, secret) || strings.Contains(s, "0123456789abcdef") {
			t.Fatalf("the page shows the credential:\n%s", s)
		}
	}
	if !strings.Contains(body, "429 from 127.0.0.1: Retry-After 1s") {
		t.Errorf("the pause's cause is missing:\n%s", body)
	}
}

// TestPoolOnPage checks that a pool shows its summed limits and each
// member, a quarantined one paused until its quarantine's end with that
// cause.
func TestPoolOnPage(t *testing.T) {
	clk := clockwork.NewFakeClockAt(epoch)
	p := newPage(t, statuspage.WithClock(clk))
	var ms []pool.Member
	for _, name := range []string{"a", "b"} {
		b, _ := throttle.New(10, throttle.Per(10, time.Second), throttle.WithClock(clk), throttle.WithName("requests"))
		l, _ := throttle.NewLimiter(b)
		ms = append(ms, pool.Member{Name: name, Gate: l})
	}
	pl, err := pool.New(ms, pool.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	p.RegisterPool("keys", pl)
	until := clk.Now().Add(time.Hour)
	if err := pl.Quarantine("b", until); err != nil {
		t.Fatal(err)
	}
	_, v := get(t, p, "format=json")
	shown := map[string]int{}
	for i, l := range v.Limiters {
		shown[l.Name] = i
	}
	ia, oka := shown["keys/a"]
	ib, okb := shown["keys/b"]
	ip, okp := shown["keys"]
	if !oka || !okb || !okp {
		t.Fatalf("shown %v, want keys, keys/a and keys/b", shown)
	}
	if got := v.Limiters[ip].Limits[0]; got.Remaining != 10 {
		t.Errorf("the pool shows %+v, want a's 10 left (b is quarantined)", got)
	}
	if got := v.Limiters[ib].Limits[0]; got.Cause != "quarantined by the pool" || got.PausedNs != int64(time.Hour) || got.Remaining != 0 {
		t.Errorf("b shows %+v, want quarantined for an hour", got)
	}
	if got := v.Limiters[ia].Limits[0]; got.Cause != "" || got.PausedNs != 0 || got.Remaining != 10 {
		t.Errorf("a shows %+v", got)
	}
}
