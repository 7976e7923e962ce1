package httpthrottle_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
)

// advanceUntil advances fc by step each time timers timers are pending,
// until done is closed.
func advanceUntil(t testing.TB, fc *clockwork.FakeClock, done <-chan struct{}, timers int, step time.Duration) {
	t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		blocked := make(chan error, 1)
		go func() { blocked <- fc.BlockUntilContext(ctx, timers) }()
		select {
		case <-done:
			cancel()
			<-blocked
			return
		case err := <-blocked:
			cancel()
			if err != nil {
				t.Fatalf("waiting for a timer: %v", err)
			}
			fc.Advance(step)
		}
	}
}

// trackedBody is a request body that records whether it was closed.
type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error {
	b.closed.Store(true)
	return nil
}

// script answers the n-th request (from 1) with statuses[n-1] and the
// headers of hdrs[n-1] if any, and 200 after the list ends; the body names
// the attempt.
func script(statuses []int, hdrs ...http.Header) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		status := http.StatusOK
		if n <= len(statuses) {
			status = statuses[n-1]
		}
		if n <= len(hdrs) {
			for k, v := range hdrs[n-1] {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(status)
		io.WriteString(w, "attempt "+string(rune('0'+n)))
	}
}

func retryAfter(v string) http.Header { return http.Header{"Retry-After": {v}} }

// roundTrip sends req through tr, advancing the fake clock whenever timers
// timers are pending, until RoundTrip returns; it returns the response and
// its body.
func roundTrip(t *testing.T, fc *clockwork.FakeClock, timers int, tr *httpthrottle.Transport, req *http.Request) (*http.Response, string, error) {
	t.Helper()
	done := make(chan struct{})
	var resp *http.Response
	var err error
	go func() {
		defer close(done)
		resp, err = tr.RoundTrip(req)
	}()
	advanceUntil(t, fc, done, timers, 100*time.Millisecond)
	if err != nil {
		return nil, "", err
	}
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if rerr != nil {
		t.Fatalf("reading the body: %v", rerr)
	}
	return resp, string(body), nil
}

func TestRetryDecisions(t *testing.T) {
	post := func(body string, replayable bool) func(url string) *http.Request {
		return func(url string) *http.Request {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			if !replayable {
				req.GetBody = nil
			}
			return req
		}
	}
	get := func(url string) *http.Request {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		return req
	}
	withKey := func(mk func(string) *http.Request) func(string) *http.Request {
		return func(url string) *http.Request {
			req := mk(url)
			req.Header.Set("Idempotency-Key", "k1")
			return req
		}
	}
	tests := []struct {
		name     string
		req      func(url string) *http.Request
		statuses []int
		hdrs     []http.Header
		status   int // final status the caller sees
		attempts int
	}{
		{"429 GET", get, []int{429}, []http.Header{retryAfter("1")}, 200, 2},
		{"429 POST with GetBody", post("x", true), []int{429}, []http.Header{retryAfter("1")}, 200, 2},
		{"429 POST without GetBody", post("x", false), []int{429}, []http.Header{retryAfter("1")}, 429, 1},
		{"429 without Retry-After", get, []int{429}, nil, 200, 2},
		{"429 x-should-retry false", get, []int{429}, []http.Header{{"Retry-After": {"1"}, "X-Should-Retry": {"false"}}}, 429, 1},
		{"429 Stripe-Should-Retry false", get, []int{429}, []http.Header{{"Stripe-Should-Retry": {"false"}}}, 429, 1},
		{"503 GET", get, []int{503}, nil, 200, 2},
		{"503 POST", post("x", true), []int{503}, nil, 503, 1},
		{"503 POST with Idempotency-Key", withKey(post("x", true)), []int{503}, nil, 200, 2},
		{"503 POST with Retry-After", post("x", true), []int{503}, []http.Header{retryAfter("1")}, 200, 2},
		{"529 GET", get, []int{529}, nil, 200, 2},
		{"500 GET", get, []int{500}, nil, 500, 1},
		{"500 x-should-retry true", post("x", true), []int{500}, []http.Header{{"X-Should-Retry": {"true"}}}, 200, 2},
		{"403 remaining 0", get, []int{403}, []http.Header{{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"3"}}}, 200, 2},
		{"403 forbidden", get, []int{403}, nil, 403, 1},
		{"400", get, []int{400}, nil, 400, 1},
		{"retries exhausted", get, []int{429, 429, 429, 429, 429}, nil, 429, 4},
		{"huge Retry-After", get, []int{429}, []http.Header{retryAfter("1000000")}, 429, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := clockwork.NewFakeClockAt(epoch)
			rec := newRecorder(t, fc, script(tt.statuses, tt.hdrs...))
			l := newLimiter(t, fc, 10, throttle.Per(10, time.Second))
			tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
			resp, body, err := roundTrip(t, fc, 1, tr, tt.req(rec.srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || rec.count() != tt.attempts {
				t.Errorf("status %d after %d attempts, want %d after %d", resp.StatusCode, rec.count(), tt.status, tt.attempts)
			}
			if want := "attempt " + string(rune('0'+tt.attempts)); body != want {
				t.Errorf("body %q, want %q: the last response, intact", body, want)
			}
			rec.mu.Lock()
			for i, b := range rec.bodies {
				if b != rec.bodies[0] {
					t.Errorf("attempt %d sent body %q, want %q", i+1, b, rec.bodies[0])
				}
			}
			rec.mu.Unlock()
		})
	}
}

// TestRetryWaits checks the wait before a retry on the fake clock: the
// server's Retry-After is the floor, and the shared pause holds the retry
// as it holds everyone.
func TestRetryWaits(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	rec := newRecorder(t, fc, script([]int{429, 429}, retryAfter("3"), retryAfter("5")))
	l := newLimiter(t, fc, 10, throttle.Per(10, time.Second))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
	req, _ := http.NewRequest(http.MethodGet, rec.srv.URL, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("status %v, error %v; want 200", resp, err)
			return
		}
		resp.Body.Close()
	}()
	advanceUntil(t, fc, done, 1, 10*time.Millisecond)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// Each retry goes when the pause ends: the bucket is lowered to the
	// refused call's cost, not emptied, so that its retry waits for no
	// refill on top of the server's wait.
	want := []time.Duration{0, 3 * time.Second, 8 * time.Second}
	if len(rec.arrivals) != len(want) {
		t.Fatalf("%d attempts, want %d", len(rec.arrivals), len(want))
	}
	for i, at := range rec.arrivals {
		if got := at.Sub(epoch); got != want[i] {
			t.Errorf("attempt %d at +%v, want +%v", i+1, got, want[i])
		}
	}
}

func TestTransportDeadlines(t *testing.T) {
	t.Run("permit past the deadline", func(t *testing.T) {
		fc := clockwork.NewFakeClockAt(epoch)
		rec := newRecorder(t, fc, script(nil))
		l := newLimiter(t, fc, 1, throttle.Per(1, time.Second))
		if ok, _ := l.TryAcquire(1); !ok {
			t.Fatal("setup: the bucket should hold a token")
		}
		tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
		ctx, cancel := clockwork.WithTimeout(context.Background(), fc, 500*time.Millisecond)
		defer cancel()
		body := &trackedBody{Reader: strings.NewReader("x")}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rec.srv.URL, body)
		_, err := tr.RoundTrip(req)
		var we *throttle.WaitError
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &we) || we.Wait != time.Second {
			t.Fatalf("error %v, want a *WaitError of 1s matching context.DeadlineExceeded", err)
		}
		if rec.count() != 0 {
			t.Error("the request was sent")
		}
		if !body.closed.Load() {
			t.Error("the request body was not closed")
		}
		if wt, _ := l.WaitTime(1); wt != time.Second {
			t.Errorf("the failed request spent tokens: wait %v, want 1s", wt)
		}
		if st := tr.Stats(); st.Failed != 1 || st.Sent != 0 {
			t.Errorf("stats %+v", st)
		}
	})

	t.Run("Retry-After past the deadline", func(t *testing.T) {
		fc := clockwork.NewFakeClockAt(epoch)
		rec := newRecorder(t, fc, script([]int{429}, retryAfter("2")))
		l := newLimiter(t, fc, 10, throttle.Per(10, time.Second))
		tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
		ctx, cancel := clockwork.WithTimeout(context.Background(), fc, time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rec.srv.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 429 || string(body) != "attempt 1" || rec.count() != 1 {
			t.Errorf("status %d body %q after %d attempts, want the 429 itself after 1", resp.StatusCode, body, rec.count())
		}
	})

	t.Run("next permit past the deadline", func(t *testing.T) {
		// The retry fits the deadline, but the permit after it does not
		// (the server says nothing remains: the bucket refills from 0):
		// the caller gets the 429, kept in memory while the retry waited.
		fc := clockwork.NewFakeClockAt(epoch)
		rec := newRecorder(t, fc, script([]int{429}, http.Header{"Retry-After": {"1"}, "X-Ratelimit-Remaining": {"0"}}))
		l := newLimiter(t, fc, 1, throttle.Per(1, 10*time.Second))
		tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
		ctx, cancel := clockwork.WithTimeout(context.Background(), fc, 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rec.srv.URL, nil)
		resp, body, err := roundTrip(t, fc, 2, tr, req) // the deadline and the back-off
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 429 || body != "attempt 1" || rec.count() != 1 {
			t.Errorf("status %d body %q after %d attempts, want the 429 itself after 1", resp.StatusCode, body, rec.count())
		}
	})

	t.Run("cancelled during the back-off", func(t *testing.T) {
		fc := clockwork.NewFakeClockAt(epoch)
		rec := newRecorder(t, fc, script([]int{429}, retryAfter("5")))
		l := newLimiter(t, fc, 10, throttle.Per(10, time.Second))
		tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rec.srv.URL, nil)
		errc := make(chan error)
		go func() {
			resp, err := tr.RoundTrip(req)
			if resp != nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		blockUntil(t, fc, 1)
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
		if rec.count() != 1 {
			t.Errorf("%d attempts, want 1", rec.count())
		}
	})
}

// TestTransportLeavesRequestAlone: retries send clones; the caller's request
// keeps its header, URL and body.
func TestTransportLeavesRequestAlone(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	rec := newRecorder(t, fc, script([]int{429, 503}, retryAfter("1"), retryAfter("1")))
	l := newLimiter(t, fc, 10, throttle.Per(10, time.Second))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
	req, _ := http.NewRequest(http.MethodPut, rec.srv.URL+"/a?b=c", strings.NewReader("payload"))
	req.Header.Set("X-Mine", "1")
	body, url := req.Body, req.URL
	resp, _, err := roundTrip(t, fc, 1, tr, req)
	if err != nil || resp.StatusCode != 200 || rec.count() != 3 {
		t.Fatalf("status %v, error %v after %d attempts", resp, err, rec.count())
	}
	if req.Body != body || req.URL != url || req.URL.String() != rec.srv.URL+"/a?b=c" || len(req.Header) != 1 ||
		req.Header.Get("X-Mine") != "1" || req.GetBody == nil {
		t.Errorf("the caller's request changed: %+v", req)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, b := range rec.bodies {
		if b != "payload" {
			t.Errorf("attempt %d sent %q, want the payload", i+1, b)
		}
	}
}

// failingTransport fails every request after closing its body, as a
// transport must.
type failingTransport struct{ calls atomic.Int64 }

var errNetwork = errors.New("network down")

func (f *failingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.calls.Add(1)
	if req.Body != nil {
		req.Body.Close()
	}
	return nil, errNetwork
}

func TestTransportBaseErrors(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	l := newLimiter(t, fc, 10, throttle.Per(10, time.Second))
	base := &failingTransport{}
	tr := must(httpthrottle.NewTransport(base, httpthrottle.Shared(l)))
	req, _ := http.NewRequest(http.MethodGet, "http://example.invalid/", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, errNetwork) {
		t.Fatalf("error %v, want the base transport's", err)
	}
	if base.calls.Load() != 1 {
		t.Errorf("%d attempts, want 1: base errors are not retried", base.calls.Load())
	}
	if wt, _ := l.WaitTime(10); wt != 100*time.Millisecond {
		t.Errorf("wait for a full bucket %v, want 100ms: the permit stays spent", wt)
	}
}

func TestTransportLimiterChoice(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	rec := newRecorder(t, fc, script(nil))
	errPick := errors.New("no limiter for you")
	pick := func(r *http.Request) (throttle.Gate, error) {
		switch r.URL.Path {
		case "/none":
			return nil, nil
		case "/bad":
			return nil, errPick
		}
		return newLimiter(t, fc, 1, throttle.Per(1, time.Second)), nil
	}
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.PickFunc(pick)))
	req, _ := http.NewRequest(http.MethodGet, rec.srv.URL+"/limited", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/limited: status %v, error %v", resp, err)
	}
	resp.Body.Close()
	req, _ = http.NewRequest(http.MethodGet, rec.srv.URL+"/bad", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, errPick) {
		t.Errorf("error %v, want the Picker's", err)
	}
	// No Gate is no request, never an unlimited one.
	req, _ = http.NewRequest(http.MethodGet, rec.srv.URL+"/none", nil)
	if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), req.URL.Host) {
		t.Errorf("no Gate: error %v, want one naming %s", err, req.URL.Host)
	}
	if rec.count() != 1 {
		t.Errorf("%d requests sent, want 1", rec.count())
	}
}

// TestRetryOpenAIResetIsToFull: OpenAI's x-ratelimit-reset-requests is the
// time until the bucket is full again, not a wait. A 429 with none of 600 a
// minute left and "reset-requests: 1m0s" pauses the limiter for one
// request's refill, 100 ms, not the minute: a call made meanwhile goes
// when the emptied bucket next has a token at the limiter's own rate
// (+200 ms), and the refused call's retry after its back-off.
func TestRetryOpenAIResetIsToFull(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	openai := http.Header{
		"X-Ratelimit-Limit-Requests":     {"600"},
		"X-Ratelimit-Remaining-Requests": {"0"},
		"X-Ratelimit-Reset-Requests":     {"1m0s"},
		"X-Ratelimit-Limit-Tokens":       {"150000"},
		"X-Ratelimit-Remaining-Tokens":   {"149000"},
		"X-Ratelimit-Reset-Tokens":       {"400ms"},
	}
	rec := newRecorder(t, fc, script([]int{429}, openai))
	l := newLimiter(t, fc, 10, throttle.Per(600, time.Minute))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
	var wg sync.WaitGroup
	send := func() {
		req, _ := http.NewRequest(http.MethodGet, rec.srv.URL, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("status %v, error %v; want 200", resp, err)
			return
		}
		resp.Body.Close()
	}
	wg.Go(send)
	blockUntil(t, fc, 1) // the refused call's back-off
	if until, ok := pausedUntil(bucketsOf(l)[0]); !ok || !until.Equal(epoch.Add(100*time.Millisecond)) {
		t.Fatalf("paused until +%v (%v), want +100ms: the reset is the time to full, not a wait", until.Sub(epoch), ok)
	}
	wg.Go(send)
	waitFor(t, "the second call to queue", func() bool { return httpthrottle.QueuedFor(l) == 1 })
	blockUntil(t, fc, 2) // the back-off, and the head of the queue
	// The back-off is at least 250 ms: only the queued call is due by +200ms.
	fc.Advance(200*time.Millisecond - time.Nanosecond)
	if got := rec.count(); got != 1 {
		t.Fatalf("%d requests reached the server before +200ms, want 1", got)
	}
	fc.Advance(time.Nanosecond)
	waitFor(t, "the queued call to reach the server", func() bool { return rec.count() == 2 })
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	advanceUntil(t, fc, done, 1, 10*time.Millisecond)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.arrivals) != 3 {
		t.Fatalf("%d attempts, want 3", len(rec.arrivals))
	}
	if got := rec.arrivals[1].Sub(epoch); got != 200*time.Millisecond {
		t.Errorf("the call made during the pause went at +%v, want +200ms", got)
	}
	// The retry waits its back-off (500 ms, jittered by half), never the
	// minute of the reset.
	if got := rec.arrivals[2].Sub(epoch); got < 250*time.Millisecond || got > 750*time.Millisecond {
		t.Errorf("the retry went at +%v, want within its back-off of 250-750ms", got)
	}
}
