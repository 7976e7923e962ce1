package httpthrottle_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/htb"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/trtcm"
)

// The Transport and Handler over Gates that are not a *Limiter: what
// they do goes through the Gate interface and the capabilities it has.

// capableGate is a Limiter seen only as a Gate with every capability
// (Pauser, Leveler, Meter, Taker) and a Clock: what redisbucket's Limiter
// offers, but in process, on a fake clock.
type capableGate struct {
	*throttle.Limiter
	clk clockwork.Clock
}

func (g capableGate) Clock() clockwork.Clock { return g.clk }

// bareGate is a Gate with no capability but its Clock.
type bareGate struct {
	throttle.Gate
	clk clockwork.Clock
}

func (g bareGate) Clock() clockwork.Clock { return g.clk }

// TestTransportOverGate: a 429 with Retry-After pauses a Gate that is a
// Pauser, for every caller, and lowers its level to the refused call's
// cost; a remaining count lowers a Leveler; the refused call is retried
// after the server's wait. A Gate with neither capability is not paused,
// and its refused call is retried after the wait all the same.
func TestTransportOverGate(t *testing.T) {
	for _, capable := range []bool{true, false} {
		name := "bare"
		if capable {
			name = "capable"
		}
		t.Run(name, func(t *testing.T) {
			fc := clockwork.NewFakeClockAt(epoch)
			rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					w.Header().Set("Retry-After", "2")
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				w.Header().Set("X-Ratelimit-Limit-Requests", "10")
				w.Header().Set("X-Ratelimit-Remaining-Requests", "3")
				w.Header().Set("X-Ratelimit-Reset-Requests", "700ms")
				w.WriteHeader(http.StatusOK)
			})
			l := newLimiter(t, fc, 10, throttle.Per(10, time.Second))
			var g throttle.Gate = capableGate{l, fc}
			if !capable {
				g = bareGate{l, fc}
			}
			tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(g)))
			client := &http.Client{Transport: tr}
			done := make(chan error, 1)
			go func() {
				code, err := get(client, rec.srv.URL)
				if err == nil && code != 200 {
					err = errStatus(code)
				}
				done <- err
			}()
			blockUntil(t, fc, 1) // the back-off before the retry
			until, paused := pausedUntil(bucketsOf(l)[0])
			if capable && (!paused || !until.Equal(epoch.Add(2*time.Second))) {
				t.Fatalf("paused until %v (%v), want +2s", until, paused)
			}
			if !capable && paused {
				t.Fatal("a Gate that is no Pauser was paused")
			}
			if got, want := bucketsOf(l)[0].Status().Level, map[bool]float64{true: 1, false: 9}[capable]; got != want {
				t.Errorf("level %v after the 429, want %v", got, want)
			}
			fc.Advance(2 * time.Second)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			rec.mu.Lock()
			arrivals := slicesClone(rec.arrivals)
			rec.mu.Unlock()
			if len(arrivals) != 2 || !arrivals[1].Equal(epoch.Add(2*time.Second)) {
				t.Errorf("arrivals %v, want the retry at +2s", arrivals)
			}
			// Full again a second later: a response saying 3 remain lowers
			// a Leveler to 3.
			fc.Advance(time.Second)
			if code, err := get(client, rec.srv.URL); err != nil || code != 200 {
				t.Fatalf("third request: %d, %v", code, err)
			}
			if got, want := bucketsOf(l)[0].Status().Level, map[bool]float64{true: 3, false: 9}[capable]; got != want {
				t.Errorf("level %v after remaining 3, want %v", got, want)
			}
			if st := tr.Stats(); st.Throttled != 1 || st.Retried != 1 || st.Sent != 3 || st.Failed != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

type errStatus int

func (e errStatus) Error() string { return "status " + strconv.Itoa(int(e)) }

func slicesClone[T any](s []T) []T { return append([]T(nil), s...) }

// TestTransportOverGateLLM: WithAccounting over a Gate that is not a Limiter
// takes the estimate with the Gate's Permit and settles it from the usage
// the response reports, on the limits named for tokens.
func TestTransportOverGateLLM(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
		respondJSON(w, http.StatusOK, nil, `{"usage":{"prompt_tokens":30,"completion_tokens":12}}`)
	})
	req := must(throttle.New(10, throttle.Per(10, time.Second), throttle.WithName("requests"), throttle.WithClock(fc)))
	tok := must(throttle.New(10000, throttle.Per(10000, time.Minute), throttle.WithName("tokens"), throttle.WithClock(fc)))
	l := must(throttle.NewLimiter(req, tok))
	for _, g := range []throttle.Gate{capableGate{l, fc}, bareGate{l, fc}} {
		before := tok.Status().Level
		tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(g), httpthrottle.WithAccounting(llm.Config{})))
		r, _ := http.NewRequest(http.MethodPost, rec.srv.URL, strings.NewReader(`{"model":"m","max_tokens":500,"messages":[{"role":"user","content":"hi"}]}`))
		resp, err := tr.RoundTrip(r)
		if err != nil {
			t.Fatal(err)
		}
		if mid := tok.Status().Level; mid > before-500 {
			t.Errorf("%T: tokens %v before the body is read, want the estimate (at least 500) taken from %v", g, mid, before)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := tok.Status().Level; got != before-42 {
			t.Errorf("%T: tokens %v after settling, want %v (42 used)", g, got, before-42)
		}
	}
}

// TestLimitHandlerOverGate: Handler over a Gate that is not a Limiter
// admits and refuses through TryAcquirePermit and WaitTime, writes the
// quota headers of a Meter (none without one), and hands the handler the
// Permit the Gate gave.
func TestLimitHandlerOverGate(t *testing.T) {
	for _, meter := range []bool{true, false} {
		fc := clockwork.NewFakeClockAt(epoch)
		l := newLimiter(t, fc, 2, throttle.Per(2, 3*time.Second))
		var g throttle.Gate = capableGate{l, fc}
		if !meter {
			g = bareGate{l, fc}
		}
		var mu sync.Mutex
		var permits []throttle.Permit
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			permits = append(permits, httpthrottle.RequestPermit(w))
			mu.Unlock()
		})
		h := httpthrottle.Handler(next, httpthrottle.Shared(g))
		for i, want := range []struct {
			status     int
			rateLimit  string
			retryAfter string
		}{
			{200, `"requests";r=1;t=2`, ""},
			{200, `"requests";r=0;t=3`, ""},
			{429, `"requests";r=0;t=3`, "2"},
		} {
			w := serve(h, http.MethodGet, "/")
			if w.Code != want.status {
				t.Errorf("meter %v, request %d: status %d, want %d", meter, i+1, w.Code, want.status)
			}
			if !meter {
				want.rateLimit = ""
			}
			if got := w.Header().Get("Ratelimit"); got != want.rateLimit {
				t.Errorf("meter %v, request %d: RateLimit %q, want %q", meter, i+1, got, want.rateLimit)
			}
			if got := w.Header().Get("Retry-After"); got != want.retryAfter {
				t.Errorf("meter %v, request %d: Retry-After %q, want %q", meter, i+1, got, want.retryAfter)
			}
		}
		if len(permits) != 2 || permits[0] == nil || permits[1] == nil {
			t.Fatalf("meter %v: permits %v, want the two admitted requests'", meter, permits)
		}
		if err := permits[0].Cancel(); err != nil || bucketsOf(l)[0].Status().Level != 1 {
			t.Errorf("meter %v: Cancel: %v, level %v; want 1 token back", meter, err, bucketsOf(l)[0].Status().Level)
		}
	}
}

// TestTypedNilGate: a Picker returning a nil *Limiter in its Gate
// (a constructor's error ignored) is an error on both sides, as a nil Gate
// is: the request is neither sent nor admitted.
func TestTypedNilGate(t *testing.T) {
	pick := func(*http.Request) (throttle.Gate, error) {
		var l *throttle.Limiter
		return l, nil
	}
	srv := newRecorder(t, clockwork.NewRealClock(), func(n int, w http.ResponseWriter, r *http.Request) {})
	req := must(http.NewRequest(http.MethodGet, srv.srv.URL, nil))
	_, err := must(httpthrottle.NewTransport(newBase(t), httpthrottle.PickFunc(pick))).RoundTrip(req)
	if err == nil || !strings.Contains(err.Error(), "no Gate") || !strings.Contains(err.Error(), req.URL.Host) {
		t.Errorf("through a nil *Limiter: %v; want an error saying the pick returned no Gate for %s", err, req.URL.Host)
	}
	if srv.count() != 0 {
		t.Errorf("%d requests sent, want none", srv.count())
	}
	if w := serve(httpthrottle.Handler(ok, httpthrottle.PickFunc(pick)), http.MethodGet, "/"); w.Code != 500 {
		t.Errorf("Handler over a nil *Limiter: status %d, want 500", w.Code)
	}
}

// TestTransportGateClock: over a Marker and an htb.Limiter on a fake
// clock, the Transport times the wait before a retry on that clock, as on
// a Limiter's.
func TestTransportGateClock(t *testing.T) {
	for _, kind := range []string{"Marker", "htb.Limiter"} {
		fc := clockwork.NewFakeClockAt(epoch)
		var g throttle.Gate
		if kind == "Marker" {
			g = must(trtcm.New(throttle.Per(10, time.Second), 10, throttle.Per(20, time.Second), 20, throttle.WithClock(fc)))
		} else {
			org := must(htb.NewQuota(10, throttle.Per(10, time.Second), throttle.WithClock(fc)))
			team := must(org.NewClass(htb.Config{Name: "team", Rate: throttle.Per(5, time.Second)}))
			g = must(htb.NewLimiter(team))
		}
		rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
			}
		})
		done := make(chan error, 1)
		go func() {
			_, err := get(&http.Client{Transport: must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(g)))}, rec.srv.URL)
			done <- err
		}()
		blockUntil(t, fc, 1) // the back-off, on the Gate's clock
		fc.Advance(time.Second)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		if len(rec.arrivals) != 2 || !rec.arrivals[1].Equal(epoch.Add(time.Second)) {
			t.Errorf("%s: arrivals %v, want the retry at +1s", kind, rec.arrivals)
		}
		rec.mu.Unlock()
	}
}

// tuningGate is a capableGate that is also a Tuner: it records what the
// Transport tells it.
type tuningGate struct {
	capableGate
	mu    sync.Mutex
	tunes []string
}

func (g *tuningGate) Tune(i int, limit int64, window time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tunes = append(g.tunes, strconv.Itoa(i)+":"+strconv.FormatInt(limit, 10)+"/"+window.String())
}

// TestTransportTunesGate: a Gate that is a Tuner is told the size of every
// quota a response reports with a known window, matched to its limits as
// remaining counts are: OpenAI's limits are a minute's, an IETF policy's
// its w; a quota without a window (Shopify's) or matching no limit tells
// nothing.
func TestTransportTunesGate(t *testing.T) {
	for _, c := range []struct {
		name string
		h    map[string]string
		want []string
	}{
		{"openai", map[string]string{"X-Ratelimit-Limit-Requests": "1500", "X-Ratelimit-Remaining-Requests": "3",
			"X-Ratelimit-Limit-Tokens": "360000", "X-Ratelimit-Remaining-Tokens": "9000"}, []string{"0:1500/1m0s", "1:360000/1m0s"}},
		{"ietf", map[string]string{"RateLimit-Policy": `"default";q=100;w=10`, "RateLimit": `"default";r=50;t=3`}, []string{"0:100/10s"}},
		{"shopify", map[string]string{"X-Shopify-Shop-Api-Call-Limit": "32/40"}, nil},
		{"anthropic-input", map[string]string{"Anthropic-Ratelimit-Input-Tokens-Limit": "20000"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			fc := clockwork.NewFakeClockAt(epoch)
			rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
				for k, v := range c.h {
					w.Header().Set(k, v)
				}
				w.WriteHeader(http.StatusOK)
			})
			req := must(throttle.New(10, throttle.Per(10, time.Second), throttle.WithName("requests"), throttle.WithClock(fc)))
			tok := must(throttle.New(10000, throttle.Per(10000, time.Second), throttle.WithName("tokens"), throttle.WithClock(fc)))
			g := &tuningGate{capableGate: capableGate{must(throttle.NewLimiter(req, tok)), fc}}
			client := &http.Client{Transport: must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(g)))}
			if code, err := get(client, rec.srv.URL); err != nil || code != 200 {
				t.Fatalf("%d, %v", code, err)
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			if strings.Join(g.tunes, " ") != strings.Join(c.want, " ") {
				t.Errorf("tuned %q, want %q", g.tunes, c.want)
			}
		})
	}
}
