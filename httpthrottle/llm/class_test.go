package llm_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/htb"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
)

// TestTransportOverClass: a Transport over the htb.Limiter of a team's
// class, an llm.Config naming the class as a token limit, takes each request's
// estimated tokens from the class before sending it and settles them to
// the usage the response reports once the body is read; a status of 400 or
// more gives them back; a deadline before the tokens fails the request
// before it is sent, spends nothing and closes its body; a request the base
// transport fails keeps its estimate, as it may have reached the server.
func TestTransportOverClass(t *testing.T) {
	status := http.StatusOK
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, `{"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	}))
	defer srv.Close()
	clk := clockwork.NewFakeClockAt(epoch)
	org, _ := htb.NewQuota(10_000, throttle.Per(10_000, time.Minute), throttle.WithClock(clk))
	team := mustClass(t, org, htb.Config{Name: "team", Rate: throttle.Per(5_000, time.Minute)})
	cl, err := htb.NewLimiter(team)
	if err != nil {
		t.Fatal(err)
	}
	cfg := llm.Config{TokenLimits: []string{team.Name()}}
	body := []byte(`{"model":"m","max_tokens":1000,"messages":[{"role":"user","content":"abcdefgh"}]}`)
	in, out, _ := cfg.Estimate(body)
	estimate := in + out
	newRequest := func(ctx context.Context) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader(body))
		return req
	}
	tr := must(httpthrottle.NewTransport(nil, httpthrottle.Shared(cl), httpthrottle.WithAccounting(cfg)))
	client := &http.Client{Transport: tr}

	resp, err := client.Do(newRequest(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	if got := team.Tokens(); got != float64(5_000-estimate) {
		t.Fatalf("before the body is read: %v, want the estimate %d taken", got, estimate)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := team.Tokens(); got != 5_000-15 {
		t.Fatalf("after a call that used 15: %v", got)
	}

	status = http.StatusBadRequest
	resp, err = client.Do(newRequest(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := team.Tokens(); got != 5_000-15 {
		t.Fatalf("a 400 was charged: %v", got)
	}

	// A deadline before the tokens: fails before sending, spends nothing,
	// and closes the body the caller handed over.
	status = http.StatusOK
	mustTry(t, team, 4_985, true)
	mustTry(t, org, 5_000, true) // the org's spare, which the team could borrow
	ctx, cancel := clockwork.WithTimeout(t.Context(), clk, time.Millisecond)
	defer cancel()
	req := newRequest(ctx)
	rb := &closedBody{Reader: bytes.NewReader(body)}
	req.Body = rb
	var we *throttle.WaitError
	if _, err := tr.RoundTrip(req); !errors.As(err, &we) {
		t.Fatalf("near deadline: %v", err)
	}
	if got := team.Tokens(); got != 0 {
		t.Fatalf("a refused call spent: %v", got)
	}
	if !rb.closed.Load() || len(req.Header) != 0 || sent.Load() != 2 {
		t.Fatalf("refused call: body closed %v, header %v, %d sent; want closed, untouched, 2 sent", rb.closed.Load(), req.Header, sent.Load())
	}

	// The base fails: the estimate stays taken, nothing settles it.
	clk.Advance(time.Minute) // the team's guarantee is full again
	failing := must(httpthrottle.NewTransport(transportFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("connection reset")
	}), httpthrottle.Shared(cl), httpthrottle.WithAccounting(cfg)))
	if _, err := failing.RoundTrip(newRequest(t.Context())); err == nil {
		t.Fatal("the base's error was not returned")
	}
	if got := team.Tokens(); got != float64(5_000-estimate) {
		t.Fatalf("after the base failed: %v, want the estimate %d kept", got, estimate)
	}
}

func mustClass(t *testing.T, p *htb.Class, cfg htb.Config) *htb.Class {
	t.Helper()
	c, err := p.NewClass(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustTry(t *testing.T, c *htb.Class, cost int64, want bool) {
	t.Helper()
	if ok, err := c.TryAcquire(cost); err != nil || ok != want {
		t.Fatalf("%s.TryAcquire(%d) = %v, %v; want %v", c.Name(), cost, ok, err, want)
	}
}

// transportFunc is an http.RoundTripper of a function.
type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// closedBody is a request body that records whether it was closed.
type closedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *closedBody) Close() error {
	b.closed.Store(true)
	return nil
}
