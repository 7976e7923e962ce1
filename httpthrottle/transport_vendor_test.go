package httpthrottle_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
)

// The Transport against vendors as they document their refusals, on the
// fake clock.

// respondJSON answers with status, the header h and the JSON body.
func respondJSON(w http.ResponseWriter, status int, h http.Header, body string) {
	for k, v := range h {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

const geminiRetry3s = `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED",
"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3s"}]}}`

// TestTransportGeminiRetryInfo: Gemini's wait is in the 429's body only; it
// pauses the limiter and is the least wait before the retry.
func TestTransportGeminiRetryInfo(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			respondJSON(w, http.StatusTooManyRequests, nil, geminiRetry3s)
			return
		}
		respondJSON(w, http.StatusOK, nil, `{}`)
	})
	l := newLimiter(t, fc, 10, throttle.Per(10, time.Second))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest(http.MethodPost, rec.srv.URL, strings.NewReader(`{}`))
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("status %v, error %v; want 200", resp, err)
			return
		}
		resp.Body.Close()
	}()
	blockUntil(t, fc, 1)
	if until, ok := pausedUntil(bucketsOf(l)[0]); !ok || !until.Equal(epoch.Add(3*time.Second)) {
		t.Fatalf("paused until +%v (%v), want +3s from the body's retryDelay", until.Sub(epoch), ok)
	}
	fc.Advance(3*time.Second - time.Nanosecond)
	if got := rec.count(); got != 1 {
		t.Fatalf("%d attempts before the retryDelay, want 1", got)
	}
	fc.Advance(time.Nanosecond)
	advanceUntil(t, fc, done, 1, 50*time.Millisecond)
	// The emptied bucket then releases one call at its rate: 100 ms.
	if got := rec.arrivals[1].Sub(epoch); got < 3*time.Second || got > 3100*time.Millisecond {
		t.Errorf("retry at +%v, want +3s to +3.1s", got)
	}
}

// eventLog records the events of a bucket.
type eventLog struct {
	mu     sync.Mutex
	events []throttle.Event
}

func (e *eventLog) Observe(ev throttle.Event) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

func (e *eventLog) of(kind throttle.EventKind) []throttle.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []throttle.Event
	for _, ev := range e.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// TestTransportBillingRefusal: a spent account (OpenAI's insufficient_quota,
// Anthropic's spend cap) comes back after one attempt, body intact, pausing
// and draining nothing, with or without an llm.Config, for an SDK that retries
// itself marked not to; Stats and the observers say what it was.
func TestTransportBillingRefusal(t *testing.T) {
	bodies := map[string]string{
		"insufficient_quota":           `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		"enforced_spend_limit_reached": `{"type":"error","error":{"type":"rate_limit_error","message":"Your organization has reached its monthly spend limit.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_1"}`,
	}
	for code, body := range bodies {
		for _, withLLM := range []bool{false, true} {
			for _, sdk := range []bool{false, true} {
				t.Run(code+"/llm="+strconv.FormatBool(withLLM)+"/sdk="+strconv.FormatBool(sdk), func(t *testing.T) {
					fc := clockwork.NewFakeClockAt(epoch)
					rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
						respondJSON(w, http.StatusTooManyRequests, nil, body)
					})
					var log eventLog
					b, _ := throttle.New(10, throttle.Per(10, time.Second), throttle.WithName("requests"), throttle.WithClock(fc), throttle.WithObserver(&log))
					bs := []*throttle.Bucket{b}
					opts := []httpthrottle.Option{}
					if withLLM {
						bs = append(bs, must(throttle.New(100_000, throttle.Per(100_000, time.Minute), throttle.WithName("tokens"), throttle.WithClock(fc))))
						opts = append(opts, httpthrottle.WithAccounting(llm.Config{}))
					}
					l := must(throttle.NewLimiter(bs...))
					tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), opts...))
					req, _ := http.NewRequest(http.MethodPost, rec.srv.URL, strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
					if sdk {
						req.Header.Set("X-Stainless-Retry-Count", "0")
					}
					resp, err := tr.RoundTrip(req)
					if err != nil {
						t.Fatal(err)
					}
					got, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 429 || string(got) != body {
						t.Errorf("status %d, body %q; want the 429 as sent", resp.StatusCode, got)
					}
					if sdk != (resp.Header.Get("X-Should-Retry") == "false") {
						t.Errorf("x-should-retry %q for an SDK that retries itself: %v", resp.Header.Get("X-Should-Retry"), sdk)
					}
					if n := rec.count(); n != 1 {
						t.Errorf("%d attempts, want 1", n)
					}
					if _, paused := pausedUntil(b); paused {
						t.Error("the limiter is paused")
					}
					if b.Status().Level != 9 {
						t.Errorf("level %v, want 9: nothing drained", b.Status().Level)
					}
					if st := tr.Stats(); st.Refused != 1 || st.Throttled != 0 || st.Retried != 0 {
						t.Errorf("stats %+v, want 1 refused, none throttled or retried", st)
					}
					if ev := log.of(throttle.EventRejected); len(ev) != 1 || ev[0].Reason != code || ev[0].Limit != "requests" {
						t.Errorf("refusal events %+v, want one with reason %q", ev, code)
					}
				})
			}
		}
	}
}

const githubSecondary = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits","status":"403"}`

// TestTransportGitHubSecondary: GitHub's secondary limit is a 403 (or 429)
// with retry-after while remaining is not 0, or with no wait at all, when
// GitHub asks for at least a minute, growing.
func TestTransportGitHubSecondary(t *testing.T) {
	counters := func(remaining string) http.Header {
		return http.Header{"X-Ratelimit-Limit": {"5000"}, "X-Ratelimit-Remaining": {remaining}, "X-Ratelimit-Used": {"1"},
			"X-Ratelimit-Reset": {strconv.FormatInt(epoch.Add(time.Hour).Unix(), 10)}, "X-Ratelimit-Resource": {"core"}}
	}
	t.Run("retry-after", func(t *testing.T) {
		fc := clockwork.NewFakeClockAt(epoch)
		rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
			h := counters("4990")
			if n == 1 {
				h.Set("Retry-After", "2")
				respondJSON(w, http.StatusForbidden, h, githubSecondary)
				return
			}
			respondJSON(w, http.StatusOK, h, `{}`)
		})
		l := newLimiter(t, fc, 5000, throttle.Per(5000, time.Hour))
		tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
		req, _ := http.NewRequest(http.MethodGet, rec.srv.URL, nil)
		resp, _, err := roundTrip(t, fc, 1, tr, req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %v, error %v; want 200 after the retry", resp, err)
		}
		// The emptied bucket then releases a call at its rate: 0.72 s.
		if got := rec.arrivals[1].Sub(epoch); got < 2*time.Second || got > 2800*time.Millisecond {
			t.Errorf("retry at +%v, want +2s to +2.8s", got)
		}
	})
	t.Run("no wait named", func(t *testing.T) {
		fc := clockwork.NewFakeClockAt(epoch)
		rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
			respondJSON(w, http.StatusForbidden, counters("4990"), githubSecondary)
		})
		l := newLimiter(t, fc, 5000, throttle.Per(5000, time.Hour))
		tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithMaxPause(3*time.Minute)))
		for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute} {
			ctx, cancel := context.WithDeadline(context.Background(), fc.Now().Add(15*time.Second))
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rec.srv.URL, nil)
			resp, err := tr.RoundTrip(req)
			cancel()
			if err != nil || resp.StatusCode != 403 {
				t.Fatalf("call %d: status %v, error %v; want the 403 at once", i, resp, err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(got) != githubSecondary {
				t.Errorf("body %q, want it intact", got)
			}
			if until, ok := pausedUntil(bucketsOf(l)[0]); !ok || until.Sub(fc.Now()) != want {
				t.Errorf("call %d: paused for %v (%v), want %v", i, until.Sub(fc.Now()), ok, want)
			}
			// Past the pause, and the second the emptied bucket takes to
			// refill one call at 5,000 an hour.
			fc.Advance(want + time.Second)
		}
		if n := rec.count(); n != 3 {
			t.Errorf("%d attempts, want 3: none retried within a 15 s deadline", n)
		}
	})
	t.Run("forbidden", func(t *testing.T) {
		fc := clockwork.NewFakeClockAt(epoch)
		rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
			respondJSON(w, http.StatusForbidden, counters("4990"), `{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest"}`)
		})
		l := newLimiter(t, fc, 5000, throttle.Per(5000, time.Hour))
		tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
		req, _ := http.NewRequest(http.MethodGet, rec.srv.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 403 {
			t.Fatalf("status %v, error %v", resp, err)
		}
		resp.Body.Close()
		if _, ok := pausedUntil(bucketsOf(l)[0]); ok || rec.count() != 1 {
			t.Error("a plain 403 paused the limiter or was retried")
		}
	})
}

// githubPrimary answers as GitHub's primary limit of 5,000 an hour whose
// window resets at reset: refused, a 403 with remaining 0; else a 200 with
// 4,990 left.
func githubPrimary(w http.ResponseWriter, fc clockwork.Clock, reset time.Time, refused bool) {
	h := http.Header{"X-Ratelimit-Limit": {"5000"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Resource": {"core"},
		"X-Ratelimit-Reset": {strconv.FormatInt(reset.Unix(), 10)}, "Date": {fc.Now().Format(http.TimeFormat)}}
	if refused {
		respondJSON(w, http.StatusForbidden, h, `{"message":"API rate limit exceeded for user ID 1.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"}`)
		return
	}
	h.Set("X-Ratelimit-Remaining", "4990")
	respondJSON(w, http.StatusOK, h, `{}`)
}

// TestTransportWindowReset: GitHub's primary limit, a 403 with remaining 0
// and the window's reset, pauses until the reset; then the level is the
// server's, whole, not a refill at 5,000 an hour (one call every 0.72 s).
func TestTransportWindowReset(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	reset := epoch.Add(3 * time.Second)
	rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
		githubPrimary(w, fc, reset, n == 1)
	})
	l := newLimiter(t, fc, 5000, throttle.Per(5000, time.Hour))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
	var wg sync.WaitGroup
	var finished atomic.Int64
	send := func() {
		defer finished.Add(1)
		req, _ := http.NewRequest(http.MethodGet, rec.srv.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("status %v, error %v; want 200", resp, err)
			return
		}
		resp.Body.Close()
	}
	wg.Go(send)
	blockUntil(t, fc, 2) // the back-off, and the restoring of the level
	for range 8 {
		wg.Go(send)
	}
	waitFor(t, "8 calls to queue", func() bool { return httpthrottle.QueuedFor(l) == 8 })
	fc.Advance(3 * time.Second)
	waitFor(t, "every call to finish", func() bool { return finished.Load() == 9 })
	wg.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, a := range rec.arrivals[1:] {
		if a.Sub(epoch) != 3*time.Second {
			t.Errorf("call %d at +%v, want every call at the reset, +3s", i+1, a.Sub(epoch))
		}
	}
}

// TestTransportStalledRefusal: a 429 whose body stalls comes back at once,
// not retried, and its body, read on, is the server's; a large body is
// handed back whole. Real time, bounded by the short refusal wait.
func TestTransportStalledRefusal(t *testing.T) {
	release := make(chan struct{})
	big := bytes.Repeat([]byte("x"), 100<<10)
	var attempts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/big" {
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write(big)
			return
		}
		w.WriteHeader(http.StatusTooManyRequests)
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, `{"error":"late"}`)
	}))
	defer srv.Close()
	defer close(release)
	l := newLimiter(t, nil, 10, throttle.Per(10, time.Second))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithBackOff(time.Millisecond, time.Millisecond)))
	httpthrottle.SetRefusalWait(tr, 20*time.Millisecond)

	start := time.Now()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/stall", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 429 {
		t.Fatalf("status %v, error %v; want the 429", resp, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("RoundTrip took %v on a stalled body", d)
	}
	if n := attempts.Load(); n != 1 {
		t.Errorf("%d attempts, want 1: a stalled refusal is not retried", n)
	}
	release <- struct{}{}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(got) != `{"error":"late"}` {
		t.Errorf("body %q, %v; want the server's", got, err)
	}

	req, _ = http.NewRequest(http.MethodGet, srv.URL+"/big", nil)
	resp, err = must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithRetries(0))).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(got, big) {
		t.Errorf("a 100 KiB refusal came back as %d bytes, want it whole", len(got))
	}
}

// TestTransportGiveBack: ten calls at once on a bucket that holds five
// estimates; each uses an eighth of its estimate. Refused for the
// deadline, the five behind would fail at once; counted with what the five
// in flight will give back, they wait for the refunds and all succeed, at
// the same instant.
func TestTransportGiveBack(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	const body = `{"model":"m","max_tokens":180,"messages":[{"role":"user","content":"Write a haiku about rate limits."}]}`
	cfg := llm.Config{}
	in, out, _ := cfg.Estimate([]byte(body))
	estimate := in + out
	used := estimate / 8
	release := make(chan struct{})
	rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
		if n <= 5 {
			<-release
		}
		respondJSON(w, http.StatusOK, nil, `{"usage":{"prompt_tokens":`+strconv.FormatInt(used, 10)+`,"completion_tokens":0}}`)
	})
	b, _ := throttle.New(5*estimate, throttle.Per(5*estimate, time.Minute), throttle.WithName("tokens"), throttle.WithClock(fc))
	l, _ := throttle.NewLimiter(b)
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithAccounting(cfg)))
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	var finished atomic.Int64
	for range 10 {
		wg.Go(func() {
			defer finished.Add(1)
			ctx, cancel := context.WithDeadline(context.Background(), epoch.Add(15*time.Second))
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rec.srv.URL, strings.NewReader(body))
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("call failed: %v", err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	waitFor(t, "five calls in flight and five queued", func() bool { return rec.count() == 5 && httpthrottle.QueuedFor(l) == 5 })
	close(release)
	waitFor(t, "every call to finish", func() bool { return finished.Load() == 10 })
	wg.Wait()
	if got := fc.Since(epoch); got != 0 {
		t.Errorf("took %v on the fake clock, want 0: the refunds serve the queue", got)
	}
	if st := tr.Stats(); st.Failed != 0 || st.Sent != 10 {
		t.Errorf("stats %+v, want 10 sent, none failed", st)
	}
}

// TestTransportWindowResetDeadline: calls queued on a drained bucket of
// 5,000 an hour (one every 0.72 s), all within their 15 s deadline; then a
// call in flight meets GitHub's 403 with remaining 0 and a reset in 3 s.
// Behind the queue and the pause, its retry would come at 17.4 s at the
// configured rate, but at the reset the window is whole again and serves
// the queue at once: it is retried at the reset, not refused at once for
// its deadline (the flake of TestVendors' GitHub primary case).
func TestTransportWindowResetDeadline(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	reset := epoch.Add(3 * time.Second)
	release := make(chan struct{})
	rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			<-release
		}
		githubPrimary(w, fc, reset, n == 1)
	})
	l := newLimiter(t, fc, 5000, throttle.Per(5000, time.Hour))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
	var wg sync.WaitGroup
	var finished atomic.Int64
	send := func() {
		defer finished.Add(1)
		ctx, cancel := context.WithDeadline(context.Background(), epoch.Add(15*time.Second))
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rec.srv.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("status %v, error %v; want 200", resp, err)
			return
		}
		resp.Body.Close()
	}
	wg.Go(send)
	waitFor(t, "the first call to reach the server", func() bool { return rec.count() == 1 })
	drain(bucketsOf(l)[0], 0) // as the 200s with remaining 0 of the calls before it
	for range 20 {
		wg.Go(send)
	}
	waitFor(t, "20 calls to queue", func() bool { return httpthrottle.QueuedFor(l) == 20 })
	close(release)
	blockUntil(t, fc, 3) // the queue's head, the back-off, and the restoring of the level
	fc.Advance(3 * time.Second)
	waitFor(t, "every call to finish", func() bool { return finished.Load() == 21 })
	wg.Wait()
	if n := rec.count(); n != 22 {
		t.Errorf("%d attempts, want 22 (21 calls, one retried)", n)
	}
}

// TestGeminiDelayHoldsEveryCall: Gemini's retryDelay is the wait of every
// call of the quota, the pause makes them all wait it, and the refused
// call, whose turn came first, goes first when it is over: queued behind
// the calls that waited meanwhile, its retry would pay the wait twice and
// could meet the server's next window spent.
func TestGeminiDelayHoldsEveryCall(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	const delay = time.Second
	rec := newRecorder(t, fc, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			respondJSON(w, http.StatusTooManyRequests, nil, strings.Replace(geminiRetry3s, `"3s"`, `"1s"`, 1))
			return
		}
		respondJSON(w, http.StatusOK, nil, `{}`)
	})
	// The calls that queue during the pause cost 2 and are due 2 s after
	// it, when the bucket has them again: the refused call's retry, due
	// at the end of the pause, is alone then.
	l := newLimiter(t, fc, 2, throttle.Per(1, time.Second))
	cost := func(r *http.Request, _ throttle.Gate) ([]int64, error) {
		if r.Header.Get("X-Call") == "refused" {
			return []int64{1}, nil
		}
		return []int64{2}, nil
	}
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithCost(cost)))
	var wg sync.WaitGroup
	var finished atomic.Int64
	call := func(body string) {
		wg.Go(func() {
			defer finished.Add(1)
			req, _ := http.NewRequest(http.MethodPost, rec.srv.URL, strings.NewReader(body))
			req.Header.Set("X-Call", body)
			resp, err := tr.RoundTrip(req)
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("call %s: status %v, error %v; want 200", body, resp, err)
				return
			}
			resp.Body.Close()
		})
	}
	call("refused")
	waitFor(t, "the first call's refusal", func() bool { return rec.count() == 1 })
	blockUntil(t, fc, 1) // its back-off, the server's delay
	call("b")
	call("c")
	waitFor(t, "the other calls to queue", func() bool { return httpthrottle.QueuedFor(l) == 2 })
	fc.Advance(delay)
	waitFor(t, "the retry to go or queue", func() bool { return rec.count() == 2 || httpthrottle.QueuedFor(l) == 3 })
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	advanceUntil(t, fc, done, 1, 100*time.Millisecond)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.bodies) != 4 || rec.bodies[1] != "refused" {
		t.Errorf("the vendor saw %q; want the refused call's retry second, before the calls that queued during its pause", rec.bodies)
	}
	if len(rec.arrivals) > 1 {
		if got := rec.arrivals[1].Sub(epoch); got < delay {
			t.Errorf("the retry came %v after the refusal, before the %v asked", got, delay)
		}
	}
}
