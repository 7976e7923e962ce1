package httpthrottle_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
)

// TestRefusalPausesBeforeRefund: a Transport with an llm.Config gives back what a
// refused request reserved only once the refusal's pause has begun, so that
// the call waiting for it is not sent into the refusal. A and B take the
// tokens of two calls and C queues; the vendor refuses A with
// Retry-After: 1. Given back before the pause, A's request would go to C
// at once; given back after, C is still queued, first in line when the pause
// ends, and reaches the vendor only then.
func TestRefusalPausesBeforeRefund(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	const body = `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":10}`
	in, out, _ := llm.Config{}.Estimate([]byte(body))
	cost := in + out
	r, err := throttle.New(100, throttle.Per(100, time.Second), throttle.WithClock(fc), throttle.WithName("requests"))
	if err != nil {
		t.Fatal(err)
	}
	// Two calls' tokens, refilled at one call's a minute: the refund of
	// a refused call is what a third waits for.
	tok, err := throttle.New(2*cost, throttle.Per(cost, time.Minute), throttle.WithClock(fc), throttle.WithName("tokens"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := throttle.NewLimiter(r, tok)
	if err != nil {
		t.Fatal(err)
	}
	arrived := make(chan string, 3)
	answer := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		call := req.Header.Get("X-Call")
		arrived <- call
		if ch := answer[call]; ch != nil {
			<-ch
		}
		if call == "a" {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"usage":{"prompt_tokens":5,"completion_tokens":1}}`))
	}))
	defer srv.Close()
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l),
		httpthrottle.WithAccounting(llm.Config{DefaultMaxTokens: 10}), httpthrottle.WithRetries(0)))
	done := make(chan int, 3)
	send := func(call string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("X-Call", call)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Error(call, err)
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}
	go send("a")
	go send("b")
	got := map[string]bool{<-arrived: true, <-arrived: true}
	if !got["a"] || !got["b"] {
		t.Fatalf("the vendor saw %v first, want a and b", got)
	}
	go send("c")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("c never queued:", err)
	}
	close(answer["a"])
	if code := <-done; code != http.StatusTooManyRequests {
		t.Fatalf("a answered %d, want 429", code)
	}
	// C, still queued, goes first when the pause ends; a call after it
	// then waits for the refill of its tokens, a minute.
	if w, err := l.WaitTime(1, cost); err != nil || w <= time.Second {
		t.Errorf("WaitTime after the refusal = %v (%v), want past the 1 s pause: the refund served c before the pause", w, err)
	}
	select {
	case call := <-arrived:
		t.Fatalf("%s reached the vendor before the pause ended", call)
	default:
	}
	fc.Advance(time.Second)
	if call := <-arrived; call != "c" {
		t.Fatalf("%s reached the vendor after the pause, want c", call)
	}
	close(answer["b"])
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Errorf("answered %d, want 200", code)
		}
	}
}
