package auto

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle/internal/headers"
)

// checkBounds fails t if a holds more than the stated bounds: at most
// autoMaxLimits learned limits a quota, every bucket name one of the
// bounded set, every rate at or above the floor.
func checkBounds(t testing.TB, a *Limiter) {
	t.Helper()
	if n := a.quotaCount(); n > a.cfg.maxQuotas {
		t.Fatalf("%d quotas; want at most %d", n, a.cfg.maxQuotas)
	}
	for _, s := range a.Stats() {
		learned := 0
		for _, l := range s.Limits {
			if l.Learned {
				learned++
			}
			if !boundedName(l.Name) {
				t.Fatalf("quota %s: bucket name %q outside the bounded set", s.Key, l.Name)
			}
			if r := perSec(l.Rate); r < a.cfg.floor*0.999 {
				t.Fatalf("quota %s, limit %s: rate %v/s below the floor %v/s", s.Key, l.Name, r, a.cfg.floor)
			}
		}
		if learned > autoMaxLimits {
			t.Fatalf("quota %s learned %d limits; want at most %d", s.Key, learned, autoMaxLimits)
		}
	}
}

// boundedName reports whether a bucket name is one of "requests",
// "tokens", "input-tokens", "output-tokens", or one of those with a suffix
// "#2" to "#65".
func boundedName(name string) bool {
	base, k, found := strings.Cut(name, "#")
	switch base {
	case "requests", "tokens", "input-tokens", "output-tokens":
	default:
		return false
	}
	if !found {
		return true
	}
	n, err := strconv.Atoi(k)
	return err == nil && n >= 2 && n <= autoMaxLimits+1
}

// TestAutoBoundedUnderFreshNames: 10,000 responses, each naming a policy
// never seen, or a GitHub resource never seen, or coming from a host never
// seen, leave at most 64 limits a quota, 16 resources a credential and
// defaultAutoMaxQuotas quotas, and bucket names (Event.Limit, which
// otelthrottle makes attribute values) from a set of at most 65 values.
func TestAutoBoundedUnderFreshNames(t *testing.T) {
	var log tunedLog
	a, clk := newAutoFake(t, Observer(&log))
	req := get(t, "https://api.example.com/")
	for i := range 10000 {
		h := http.Header{}
		h.Set("RateLimit-Policy", fmt.Sprintf(`"p%d";q=100;w=%d`, i, 1+i%7))
		h.Set("RateLimit", fmt.Sprintf(`"p%d";r=50;t=1`, i))
		clk.Advance(time.Millisecond)
		tell(t, a, clk, req, 200, h)
	}
	ls := limitStats(t, a, "api.example.com")
	if len(ls) > autoMaxLimits {
		t.Errorf("%d limits after 10,000 fresh policy names; want at most %d", len(ls), autoMaxLimits)
	}
	// The limits kept are the ones reported last.
	l, _ := a.limiterOf(req)
	if ln := autoOf(l).policy("p9999", time.Duration(1+9999%7)*time.Second, false); ln == nil {
		t.Error("the limit reported last was forgotten")
	}
	names := map[string]bool{}
	for _, e := range log.ev {
		names[e.Limit] = true
	}
	if len(names) > autoMaxLimits+1 {
		t.Errorf("%d distinct Event.Limit values; want at most %d", len(names), autoMaxLimits+1)
	}
	for n := range names {
		if !boundedName(n) {
			t.Errorf("Event.Limit %q outside the bounded set", n)
		}
	}
	checkBounds(t, a)

	// Fresh GitHub resources: 16 kept per credential.
	for i := range 10000 {
		h := http.Header{}
		headers.SetXRateLimit(h, 5000, 4999, time.Hour, true, clk.Now())
		h.Set("X-Ratelimit-Resource", "r"+strconv.Itoa(i))
		clk.Advance(time.Millisecond)
		tell(t, a, clk, get(t, "https://api.github.com/s"+strconv.Itoa(i)+"/x"), 200, h)
	}
	resources := 0
	for _, s := range a.Stats() {
		if strings.HasPrefix(s.Key, "api.github.com/") {
			resources++
		}
	}
	if resources > autoMaxResources {
		t.Errorf("%d GitHub resources kept after 10,000 fresh ones; want at most %d", resources, autoMaxResources)
	}
	checkBounds(t, a)

	// Fresh hosts: defaultAutoMaxQuotas kept, an hour before the sweep
	// would have dropped any.
	for i := range 10000 {
		tell(t, a, clk, get(t, "https://h"+strconv.Itoa(i)+".example.com/"), 200, ietf(10, 1, 9))
	}
	if n := a.quotaCount(); n > defaultAutoMaxQuotas {
		t.Errorf("%d quotas after 10,000 fresh hosts; want at most %d", n, defaultAutoMaxQuotas)
	}
	checkBounds(t, a)
}

// TestAutoMergesFamilies: one limit reported by two families (an IETF
// policy "requests" over 60 s and OpenAI's per-minute requests) is learned
// once, from the family of precedence (IETF, whose quota is also its
// burst); limits of other windows stay apart.
func TestAutoMergesFamilies(t *testing.T) {
	a, clk := newAutoFake(t)
	req := get(t, "https://gw.example.com/")
	h := http.Header{}
	h.Set("RateLimit-Policy", `"requests";q=600;w=60, "burst";q=10;w=1`)
	h.Set("RateLimit", `"requests";r=500, "burst";r=9`)
	headers.SetOpenAI(h, "requests", 900, 890, time.Second)
	for range 3 {
		clk.Advance(100 * time.Millisecond)
		tell(t, a, clk, req, 200, h)
	}
	ls := limitStats(t, a, "gw.example.com")
	var got []string
	for _, l := range ls {
		got = append(got, fmt.Sprintf("%s %d/%v", l.Name, l.Quota, l.Window))
	}
	if want := "[requests 600/1m0s requests#2 10/1s]"; fmt.Sprint(got) != want {
		t.Fatalf("learned %v; want %s", got, want)
	}
	if ls[0].Policy != "requests" || ls[1].Policy != "burst" {
		t.Errorf("policies %q, %q; want the server's names requests, burst", ls[0].Policy, ls[1].Policy)
	}
	l, _ := a.limiterOf(req)
	if ln := autoOf(l).lanes[0]; !ln.exact || ln.rem != 500 {
		t.Errorf("merged limit: exact %v, remaining %d; want IETF's: exact, 500", ln.exact, ln.rem)
	}
}

// TestAutoFloorHolds: refusals never take a rate below the floor of Range,
// whether the server reports a remaining count of 0 on its 429s, or only
// its policy; and once the server lets calls through again, a limit it
// names without counts grows back to its rate.
func TestAutoFloorHolds(t *testing.T) {
	for _, c := range []struct {
		name string
		h    func() http.Header
	}{
		{"IETF r=0", func() http.Header { return ietf(10, 1, 0) }},
		{"policy only", func() http.Header {
			h := http.Header{}
			h.Set("RateLimit-Policy", `"p";q=10;w=1`)
			return h
		}},
		{"OpenAI remaining 0", func() http.Header {
			h := http.Header{}
			headers.SetOpenAI(h, "requests", 600, 0, time.Minute)
			return h
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, clk := newAutoFake(t, Range(throttle.Per(1, time.Second), throttle.Inf))
			req := get(t, "https://api.example.com/")
			for range 30 {
				clk.Advance(2 * time.Second)
				tell(t, a, clk, req, http.StatusTooManyRequests, c.h())
				checkBounds(t, a)
			}
			l, _ := a.limiterOf(req)
			ln := autoOf(l).lanes[0]
			if ln.rate < 1 || perSec(ln.b.Status().Rate) < 0.999 {
				t.Fatalf("rate %v/s (bucket %v) after 30 refusals; want at least the floor 1/s", ln.rate, ln.b.Status().Rate)
			}
			if c.name != "policy only" {
				return
			}
			// The server lets everything through again: calls at the
			// client's rate, for a minute.
			for range 600 {
				clk.Advance(time.Duration(float64(time.Second) / max(ln.rate, 1)))
				tell(t, a, clk, req, 200, c.h())
			}
			if ln.rate < 8 {
				t.Errorf("rate %v/s a minute after the refusals stopped; want back near the policy's 10/s", ln.rate)
			}
		})
	}
}

// pauseVendor refuses every call with the given Retry-After.
type pauseVendor struct{ retryAfter string }

func (v *pauseVendor) RoundTrip(r *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Retry-After", v.retryAfter)
	return &http.Response{StatusCode: http.StatusTooManyRequests, Header: h, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
}

// TestAutoMaxPauseAbsolute: Auto's random lengthening of a pause never
// takes it past the Transport's MaxPause.
func TestAutoMaxPauseAbsolute(t *testing.T) {
	for _, maxPause := range []time.Duration{2 * time.Second, defaultMaxPause} {
		for _, ra := range []string{"1000000000000", "1"} {
			clk := newClock()
			a := must(New(Clock(clk), autoRand(0.999999)))
			var opts []httpthrottle.Option
			if maxPause != defaultMaxPause {
				opts = append(opts, httpthrottle.WithMaxPause(maxPause))
			}
			c := &http.Client{Transport: must(httpthrottle.NewTransport(&pauseVendor{ra}, a, append(opts, httpthrottle.WithRetries(0))...))}
			start := clk.Now()
			resp, err := c.Get("https://api.example.com/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			l, _ := a.limiterOf(get(t, "https://api.example.com/"))
			for _, b := range l.bs {
				if u, ok := pausedUntil(b); ok && u.Sub(start) > maxPause {
					t.Errorf("Retry-After %s, MaxPause %v: paused for %v", ra, maxPause, u.Sub(start))
				}
			}
		}
	}
}

// TestAutoLearnsBurst: a GCRA server (this library's Handler at 600
// a minute, burst 5) reports q=600;w=60 and never more than 5 left: the
// learned burst is 5, and a lone client reaches the server's 10/s within
// a few seconds instead of crawling with its reserve above the burst:
// 400 calls one after another (the Goal of issue 26) within 1.25x the floor.
func TestAutoLearnsBurst(t *testing.T) {
	clk := newClock()
	srv, err := throttle.New(5, throttle.Per(600, time.Minute), throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	a := must(New(Clock(clk), autoRand(0.5)))
	req := get(t, "https://api.example.com/")
	respond := func() {
		ok, _ := srv.TryAcquire(1)
		status := 200
		if !ok {
			status = http.StatusTooManyRequests
		}
		h := http.Header{}
		httpthrottle.WriteIETF(h, []throttle.LimitStatus{{Name: "default", Rate: throttle.Per(600, time.Minute), Remaining: max(int64(srv.Status().Level), 0), Reset: time.Second}})
		tell(t, a, clk, req, status, h)
	}
	start0 := clk.Now()
	respond()
	l, _ := a.limiterOf(req)
	ln := autoOf(l).lanes[0]
	refused := 0
	calls := 0
	for calls < 400 {
		l, _ := a.limiterOf(req)
		d, err := l.WaitTime(1)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(d + time.Millisecond)
		if ok, _ := l.TryAcquire(1); !ok {
			continue
		}
		before := srv.Status().Level
		respond()
		if before < 1 {
			refused++
		}
		calls++
	}
	// The floor: the burst at once, then the server's rate.
	floor := time.Duration(float64(calls-5) / 10 * float64(time.Second))
	if took := clk.Since(start0); took > floor*5/4 {
		t.Errorf("%d calls took %v; want within 1.25x the floor %v", calls, took, floor)
	}
	if b := ln.burst(); b != 5 {
		t.Errorf("learned burst %v; want 5", b)
	}
	if ln.rate < 8 {
		t.Errorf("rate %v/s after 400 calls; want near 10/s", ln.rate)
	}
	if refused > 2 {
		t.Errorf("%d refusals; want at most 2", refused)
	}
}

// TestAutoSpacesFirstCount: a first IETF count that shows most of the
// limit spent (9 of 50: client #41 of fifty that start together, or a
// client alone on a server whose burst is 10) spaces the next call by
// autoSpace times the fraction spent; the next count tells them apart: the
// same count again (the server's bucket refilled to it) keeps at least the
// share before the spacing, a count that fell does not. A first count
// with the limit left, or of a per-minute vendor, is not spaced.
func TestAutoSpacesFirstCount(t *testing.T) {
	for _, tc := range []struct {
		name     string
		second   int64
		restored bool
	}{{"alone", 9, true}, {"crowded", 2, false}} {
		t.Run(tc.name, func(t *testing.T) {
			a, clk := newAutoFake(t)
			req := get(t, "https://api.example.com/")
			l := tell(t, a, clk, req, 200, ietf(50, 1, 9))
			ln := autoOf(l).lanes[0]
			unspaced := ln.spaced
			if unspaced <= 0 || ln.rate >= unspaced {
				t.Fatalf("first count of 9 of 50: rate %v/s, share before the spacing %v; want it spaced", ln.rate, unspaced)
			}
			d, err := l.WaitTime(1)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := d.Seconds(), 1/unspaced+autoSpace*41.0/50; math.Abs(got-want) > 0.01 {
				t.Errorf("next call in %v; want %.3fs", d, want)
			}
			clk.Advance(d)
			if ok, _ := l.TryAcquire(1); !ok {
				t.Fatal("next call not granted when due")
			}
			before := ln.rate
			tell(t, a, clk, req, 200, ietf(50, 1, tc.second))
			if !tc.restored && ln.rate > 0.95*before {
				// 2 of 50 left after one call of this client's: the crowd's
				// first measurement, taken in full (a cut of 6% here), not
				// averaged with the first share (3%).
				t.Errorf("rate %v/s after a crowded count, from %v/s; want the cut in full, below %v/s", ln.rate, before, 0.95*before)
			}
			if got := ln.rate >= unspaced; got != tc.restored {
				t.Errorf("rate %v/s after a second count of %d; the share before the spacing was %v/s, want restored %v", ln.rate, tc.second, unspaced, tc.restored)
			}
			if ln.spaced != 0 {
				t.Errorf("spacing kept after the second count: %v", ln.spaced)
			}
		})
	}
	for _, h := range []http.Header{ietf(50, 1, 50), openAI(3000, 9)} {
		a, clk := newAutoFake(t)
		l := tell(t, a, clk, get(t, "https://api.example.com/"), 200, h)
		if ln := autoOf(l).lanes[0]; ln.spaced != 0 {
			t.Errorf("first count %v spaced the next call", h)
		}
	}
}

func openAI(limit, remaining int64) http.Header {
	h := http.Header{}
	headers.SetOpenAI(h, "requests", limit, remaining, time.Second)
	return h
}

// TestAutoFanOut: ten calls made at once, with the server saying 590 of
// 600 a minute are left, go at once rather than at the starting rate.
func TestAutoFanOut(t *testing.T) {
	a, clk := newAutoFake(t)
	req := get(t, "https://api.openai.com/v1/x")
	h := http.Header{}
	headers.SetOpenAI(h, "requests", 600, 590, time.Second)
	tell(t, a, clk, req, 200, h)
	l, _ := a.limiterOf(req)
	n := 0
	for range 10 {
		if ok, _ := l.TryAcquire(1); ok {
			n++
		}
	}
	if n != 10 {
		t.Errorf("%d of 10 calls granted at once with 590 of 600 left; want 10", n)
	}
}

// TestAutoIgnoresBilling: a refusal about the request or the account (the
// Transport's 413 for OpenAI's insufficient_quota, a 402) teaches nothing:
// no cut, no refusal counted.
func TestAutoIgnoresBilling(t *testing.T) {
	for _, status := range []int{http.StatusRequestEntityTooLarge, http.StatusPaymentRequired} {
		a, clk := newAutoFake(t)
		req := get(t, "https://api.example.com/")
		tell(t, a, clk, req, 200, ietf(50, 1, 40))
		l, _ := a.limiterOf(req)
		before := autoOf(l).lanes[0].rate
		for range 5 {
			clk.Advance(time.Second)
			tell(t, a, clk, req, status, ietf(50, 1, 40))
		}
		if got := autoOf(l).lanes[0].rate; got != before {
			t.Errorf("status %d: rate %v -> %v", status, before, got)
		}
		if s := a.Stats()[0]; s.Throttled != 0 {
			t.Errorf("status %d: %d refusals counted", status, s.Throttled)
		}
	}
}

// TestAutoTokenCapacityNeverShrinks: a token bucket's capacity only
// grows, so that a call queued with a cost capped at the capacity it saw
// never fails as oversized when the share is re-tuned.
func TestAutoTokenCapacityNeverShrinks(t *testing.T) {
	a, clk := newAutoFake(t)
	req := get(t, "https://api.openai.com/v1/x")
	var last int64
	for i := range 50 {
		h := http.Header{}
		headers.SetOpenAI(h, "tokens", 60000, int64(60000-i*1200), time.Second)
		clk.Advance(300 * time.Millisecond)
		tell(t, a, clk, req, 200, h)
		l, _ := a.limiterOf(req)
		b := l.Bucket("tokens")
		if b.Status().Capacity < last {
			t.Fatalf("response %d: token capacity %d < %d before", i, b.Status().Capacity, last)
		}
		last = b.Status().Capacity
	}
	if last < 60000/4 {
		t.Errorf("token capacity %d; want a start that lets prompts through", last)
	}
}

var _ clockwork.Clock = (*clockwork.FakeClock)(nil)
