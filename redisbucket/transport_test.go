package redisbucket_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/redisbucket"
)

// vendor is a loopback API that answers each request by the function the
// test gives it, and records which process sent what, when (on the rig's
// clock).
type vendor struct {
	srv     *httptest.Server
	mu      sync.Mutex
	arrived []string // the X-Proc of each request, in order
}

func newVendor(t *testing.T, answer func(n int, proc string, w http.ResponseWriter)) *vendor {
	v := &vendor{}
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		v.mu.Lock()
		v.arrived = append(v.arrived, r.Header.Get("X-Proc"))
		n := len(v.arrived)
		v.mu.Unlock()
		answer(n, r.Header.Get("X-Proc"), w)
	}))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *vendor) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.arrived)
}

// post sends one chat completion through tr as proc.
func post(tr http.RoundTripper, url, proc string) (int, error) {
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url,
		strings.NewReader(`{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"Say ok."}]}`))
	req.Header.Set("X-Proc", proc)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestTransportFleet: two processes' Transports on one shared Limiter (two
// Limiters on one id), WithAccounting, against a vendor with OpenAI's headers. A
// 429 with Retry-After that one process gets pauses the other before its
// next request; a remaining count one process hears lowers the level the
// other sees; each call's tokens are settled in Redis from the usage the
// vendor reports.
func TestTransportFleet(t *testing.T) {
	r := newRig(t)
	limits := []redisbucket.Limit{
		{Name: "requests", Capacity: 10, Rate: throttle.Per(10, time.Second)},
		{Name: "tokens", Capacity: 60000, Rate: throttle.Per(60000, time.Minute)},
	}
	var mu sync.Mutex
	var settled []int64 // the tokens each permit was settled to
	obs := observerFunc(func(e redisbucket.Event) {
		if e.Kind == throttle.EventSettled && e.Limit == "tokens" {
			mu.Lock()
			settled = append(settled, e.Cost)
			mu.Unlock()
		}
	})
	one := r.limiter("http", limits, redisbucket.WithObserver(obs))
	other := r.limiter("http", limits, redisbucket.WithObserver(obs))
	v := newVendor(t, func(n int, proc string, w http.ResponseWriter) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Ratelimit-Limit-Requests", "600") // a minute's: the configured 10/s
		h.Set("X-Ratelimit-Reset-Requests", "100ms")
		if n == 1 {
			h.Set("X-Ratelimit-Remaining-Requests", "0")
			h.Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		h.Set("X-Ratelimit-Remaining-Requests", "4")
		io.WriteString(w, `{"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42}}`)
	})
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	trOne := must(httpthrottle.NewTransport(base, httpthrottle.Shared(one), httpthrottle.WithAccounting(llm.Config{})))
	trOther := must(httpthrottle.NewTransport(base, httpthrottle.Shared(other), httpthrottle.WithAccounting(llm.Config{})))

	results := make(chan error, 2)
	send := func(tr http.RoundTripper, proc string) {
		code, err := post(tr, v.srv.URL, proc)
		if err == nil && code != http.StatusOK {
			err = &statusError{code}
		}
		results <- err
	}
	go send(trOne, "one")
	// The 429 paused the fleet: one's back-off before its retry is armed.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := levels(t, other); got[0] > 0 {
		t.Fatalf("levels %v seen by the other process after the 429, want no request left", got)
	}
	go send(trOther, "other")
	if err := r.fc.BlockUntilContext(ctx, 2); err != nil { // and other's wait
		t.Fatal(err)
	}
	if n := v.count(); n != 1 {
		t.Fatalf("%d requests reached the vendor during the pause, want only the refused one", n)
	}
	// From empty at the pause's end, a request every 0.1 s.
	r.advance(2 * time.Second)
	for v.count() < 3 {
		// Wait until a call is asleep on the clock, or has reached the
		// vendor on the time already given.
		armed := make(chan error, 1)
		bctx, bcancel := context.WithCancel(ctx)
		go func() { armed <- r.fc.BlockUntilContext(bctx, 1) }()
		for waiting := true; waiting; {
			select {
			case err := <-armed:
				if err != nil && v.count() < 3 {
					t.Fatalf("%d requests reached the vendor, and no call waits: %v", v.count(), err)
				}
				waiting = false
			default:
				if v.count() >= 3 {
					waiting = false
				}
				runtime.Gosched()
			}
		}
		bcancel()
		if v.count() < 3 {
			r.advance(100 * time.Millisecond)
		}
	}
	for range 2 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	// Each 200 reported 4 requests left: the shared level shows it,
	// whichever process looks. Each permit was settled in Redis: the
	// refused attempt to no tokens, the answered calls to the 42 they used.
	if got := levels(t, other); got[0] > 4 {
		t.Errorf("requests %v after the vendor's remaining 4, want at most 4", got[0])
	}
	mu.Lock()
	slices.Sort(settled)
	if !slices.Equal(settled, []int64{0, 42, 42}) {
		t.Errorf("tokens settled %v, want [0 42 42]", settled)
	}
	mu.Unlock()
	if st := trOne.Stats(); st.Throttled != 1 || st.Retried != 1 || st.Failed != 0 {
		t.Errorf("one's stats %+v", st)
	}
	if st := trOther.Stats(); st.Throttled != 0 || st.Failed != 0 {
		t.Errorf("other's stats %+v", st)
	}
}

type statusError struct{ code int }

func (e *statusError) Error() string { return http.StatusText(e.code) }

// TestTransportLLMBurstOnEstimates is issue 42's burst through a shared
// Limiter: ten calls at once under WithAccounting, each reserving its prompt and
// max_tokens (400) where it uses 95; the tokens cover four reservations,
// and the projection of the tenth is minutes past its 15 s deadline. No
// call is refused at once: those that do not fit wait their turn and go
// as the first settle, all ten served with the clock standing still.
func TestTransportLLMBurstOnEstimates(t *testing.T) {
	r := newRig(t)
	lim := r.limiter("burst", []redisbucket.Limit{
		{Name: "requests", Capacity: 100, Rate: throttle.Per(100, time.Minute)},
		{Name: "tokens", Capacity: 1700, Rate: throttle.Per(1700, 10*time.Minute)},
	})
	release := make(chan struct{})
	var once sync.Once
	v := newVendor(t, func(n int, proc string, w http.ResponseWriter) {
		if n == 4 {
			once.Do(func() { close(release) })
		}
		<-release // the first answers wait until four calls are in flight
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"usage":{"prompt_tokens":10,"completion_tokens":85,"total_tokens":95}}`)
	})
	// Before the server closes (cleanups run last first): a failed test
	// leaves no answer waiting.
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr := must(httpthrottle.NewTransport(base, httpthrottle.Shared(lim), httpthrottle.WithAccounting(llm.Config{})))
	const n = 10
	errs := make(chan error, n)
	for i := range n {
		go func() {
			ctx, cancel := context.WithDeadline(context.Background(), r.fc.Now().Add(15*time.Second))
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, v.srv.URL,
				strings.NewReader(`{"model":"m","max_tokens":400,"messages":[{"role":"user","content":"Say ok."}]}`))
			req.Header.Set("X-Proc", string(rune('a'+i)))
			resp, err := tr.RoundTrip(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = &statusError{resp.StatusCode}
				}
			}
			errs <- err
		}()
	}
	timeout := time.After(20 * time.Second)
	for range n {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("a call failed: %v (%d reached the vendor)", err, v.count())
			}
		case <-timeout:
			t.Fatalf("%d of %d calls reached the vendor, the others still wait", v.count(), n)
		}
	}
	if got := v.count(); got != n {
		t.Fatalf("%d calls reached the vendor, want %d", got, n)
	}
}
