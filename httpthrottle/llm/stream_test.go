package llm_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/throttletest"
)

// streamCalls are the calls of every API shape, streamed or not, that the
// fake vendor answers: path and body. Each prompt is 8 digits in one
// message (9 tokens with framing) and asks for at most 100 tokens.
var streamCalls = []struct {
	name, path, body string
}{
	{"chat, include_usage", "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"12345678"}],"max_tokens":100}`},
	{"chat, no usage", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"12345678"}],"max_tokens":100}`},
	{"chat json", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"12345678"}],"max_tokens":100}`},
	{"responses", "/v1/responses", `{"model":"m","stream":true,"input":[{"role":"user","content":"12345678"}],"max_output_tokens":100}`},
	{"responses json", "/v1/responses", `{"model":"m","input":[{"role":"user","content":"12345678"}],"max_output_tokens":100}`},
	{"anthropic", "/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":"12345678"}],"max_tokens":100}`},
	{"anthropic json", "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"12345678"}],"max_tokens":100}`},
	{"gemini sse", "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"12345678"}]}],"generationConfig":{"maxOutputTokens":100}}`},
	{"gemini json array", "/v1beta/models/gemini-x:streamGenerateContent", `{"contents":[{"role":"user","parts":[{"text":"12345678"}]}],"generationConfig":{"maxOutputTokens":100}}`},
	{"gemini json", "/v1beta/models/gemini-x:generateContent", `{"contents":[{"role":"user","parts":[{"text":"12345678"}]}],"generationConfig":{"maxOutputTokens":100}}`},
}

func post(t testing.TB, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer k")
	return req
}

// TestTransportSettlesStreams: every shape, read in pieces of one byte, is
// settled to what the vendor counted (9 in, 37 out), with the caller
// reading exactly the bytes the vendor sent.
func TestTransportSettlesStreams(t *testing.T) {
	for _, tt := range streamCalls {
		t.Run(tt.name, func(t *testing.T) {
			fc := clockwork.NewFakeClockAt(epoch)
			vendor := throttletest.NewServer(throttletest.Config{ReplyTokens: 37, StreamChunkTokens: 5, Clock: fc})
			defer vendor.Close()
			direct, err := newBase(t).RoundTrip(post(t, vendor.URL+tt.path, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := io.ReadAll(direct.Body)
			direct.Body.Close()

			l := twoBuckets(t, fc)
			tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithAccounting(llm.Config{})))
			resp, err := tr.RoundTrip(post(t, vendor.URL+tt.path, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			// Reserved 9+100 while the body is unread.
			if got := l.Bucket("tokens").Status().Level; got != 891 {
				t.Errorf("tokens before reading: %v, want 891", got)
			}
			got, err := io.ReadAll(iotest.OneByteReader(resp.Body))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the caller read\n%q\nthe vendor sent\n%q", got, want)
			}
			// Settled at EOF, before Close.
			if got := l.Bucket("tokens").Status().Level; got != 1000-9-37 {
				t.Errorf("tokens after EOF: %v, want %d", got, 1000-9-37)
			}
			resp.Body.Close()
			if got := l.Bucket("tokens").Status().Level; got != 1000-9-37 {
				t.Errorf("tokens after Close: %v, want %d", got, 1000-9-37)
			}
		})
	}
}

// TestTransportSettlesEarlyClose: a stream closed after a few events is
// settled from what was read: the reported input and the text read.
func TestTransportSettlesEarlyClose(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	vendor := throttletest.NewServer(throttletest.Config{ReplyTokens: 100, StreamChunkTokens: 5, Clock: fc})
	defer vendor.Close()
	for _, tt := range []struct {
		name, path, body string
		events           int   // events read before Close
		want             int64 // tokens settled
	}{
		// message_start (9 in, 1 out), content_block_start, ping, then 2
		// deltas of 5 tokens: 9 + 10.
		{"anthropic", "/v1/messages", streamCalls[5].body, 5, 19},
		// Role chunk, 3 deltas of 5 tokens; no usage yet: the input
		// estimate (9) and 15 of text.
		{"chat", "/v1/chat/completions", streamCalls[0].body, 4, 24},
		// Nothing read: the input estimate, no output.
		{"chat, nothing read", "/v1/chat/completions", streamCalls[0].body, 0, 9},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := twoBuckets(t, fc)
			tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithAccounting(llm.Config{})))
			resp, err := tr.RoundTrip(post(t, vendor.URL+tt.path, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReaderSize(resp.Body, 16)
			for n := 0; n < tt.events; {
				line, err := r.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if line == "\n" {
					n++
				}
			}
			// What bufio read ahead (16 bytes at most) counts as read.
			resp.Body.Close()
			if got := 1000 - l.Bucket("tokens").Status().Level; got < float64(tt.want) || got > float64(tt.want)+5 {
				t.Errorf("settled to %v tokens, want %d (up to 5 more for bufio's read-ahead)", got, tt.want)
			}
		})
	}
}

// TestStreamFirstByte: a JSON body sent in pieces (Gemini's
// streamGenerateContent without alt=sse) reaches the caller piece by piece:
// the first chunk is read while the vendor still waits, on its fake clock,
// to send the second.
func TestStreamFirstByte(t *testing.T) {
	for _, tt := range []struct {
		path   string
		sleeps int // waits of the vendor between chunks
	}{{streamCalls[8].path, 1}, {streamCalls[7].path, 1}, {streamCalls[0].path, 4}} {
		path := tt.path
		fc := clockwork.NewFakeClockAt(epoch)
		vendor := throttletest.NewServer(throttletest.Config{ReplyTokens: 10, StreamChunkTokens: 5, StreamInterval: time.Second, Clock: fc})
		tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(twoBuckets(t, fc)), httpthrottle.WithAccounting(llm.Config{})))
		body := streamCalls[8].body
		if strings.Contains(path, "chat") {
			body = streamCalls[0].body
		}
		resp, err := tr.RoundTrip(post(t, vendor.URL+path, body))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatalf("%s: the first bytes did not come before the clock moved: %v", path, err)
		}
		copied := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, resp.Body)
			copied <- err
		}()
		for range tt.sleeps {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := fc.BlockUntilContext(ctx, 1)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			fc.Advance(time.Second)
		}
		if err := <-copied; err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		vendor.Close()
	}
}

// TestTooLargeNotThrottle: OpenAI's 429 "Request too large" for a prompt
// above the token quota neither pauses nor drains the limiter and is not
// retried; with RefuseOversized the request is not even sent.
func TestTooLargeNotThrottle(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	vendor := throttletest.NewServer(throttletest.Config{
		Requests: throttle.Per(100, time.Minute), Tokens: throttle.Per(1000, time.Minute),
		Dialect: throttletest.OpenAI, Clock: fc,
	})
	defer vendor.Close()
	huge := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("word ", 2000) + `"}],"max_tokens":10}`

	l := twoBuckets(t, fc)
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithAccounting(llm.Config{})))
	resp, err := tr.RoundTrip(post(t, vendor.URL+"/v1/chat/completions", huge))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || !strings.Contains(string(b), "Request too large") {
		t.Fatalf("status %d, body %s", resp.StatusCode, b)
	}
	if _, paused := pausedUntil(l.Bucket("requests")); paused {
		t.Error("the limiter was paused")
	}
	// The request stays spent; the tokens are given back; nothing drained.
	if r, tok := l.Bucket("requests").Status().Level, l.Bucket("tokens").Status().Level; r != 9 || tok != 1000 {
		t.Errorf("levels %v requests, %v tokens; want 9 and 1000", r, tok)
	}
	if st := tr.Stats(); st.Sent != 1 || st.Retried != 0 || st.Throttled != 0 {
		t.Errorf("transport %+v, want one attempt, no retry, not throttled", st)
	}
	// An ordinary call goes at once.
	resp, err = tr.RoundTrip(post(t, vendor.URL+"/v1/chat/completions", streamCalls[2].body))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the next call: %v, %v", resp, err)
	}
	resp.Body.Close()

	// Refused before sending.
	tr = must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(twoBuckets(t, fc)), httpthrottle.WithAccounting(llm.Config{RefuseOversized: true})))
	before := vendor.Stats().Requests
	_, err = tr.RoundTrip(post(t, vendor.URL+"/v1/chat/completions", huge))
	if !errors.Is(err, throttle.ErrCostExceedsCapacity) || !strings.Contains(err.Error(), `estimated 2017 tokens`) || !strings.Contains(err.Error(), `limit "tokens"`) {
		t.Errorf("error %v, want ErrCostExceedsCapacity naming 2017 tokens on \"tokens\"", err)
	}
	if n := vendor.Stats().Requests - before; n != 0 {
		t.Errorf("the vendor saw %d requests, want none", n)
	}
	// To an SDK that retries errors itself: a 413 saying not to retry.
	sdk := post(t, vendor.URL+"/v1/chat/completions", huge)
	sdk.Header.Set("X-Stainless-Retry-Count", "0")
	resp, err = tr.RoundTrip(sdk)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 || resp.Header.Get(httpthrottle.RefusalHeader) != "oversized" || resp.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("status %d, headers %v; want the transport's 413", resp.StatusCode, resp.Header)
	}
	if n := vendor.Stats().Requests - before; n != 0 || tr.Stats().Failed != 2 {
		t.Errorf("the vendor saw %d requests, the transport %+v; want none and 2 failed", n, tr.Stats())
	}
}

// TestTooLargeByLimit: a 429 that reports a token limit below the request's
// input estimate is about the request, whatever its body says.
func TestTooLargeByLimit(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	l := twoBuckets(t, fc)
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		h := http.Header{}
		h.Set("x-ratelimit-limit-tokens", "500")
		h.Set("x-ratelimit-remaining-tokens", "499")
		h.Set("Content-Type", "application/json")
		return &http.Response{StatusCode: 429, Header: h, Body: io.NopCloser(strings.NewReader(`{"error":{"message":"slow down"}}`)), Request: r}, nil
	})
	tr := must(httpthrottle.NewTransport(base, httpthrottle.Shared(l), httpthrottle.WithAccounting(llm.Config{}), httpthrottle.WithRetries(0)))
	body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("word ", 800) + `"}],"max_tokens":10}`
	resp, err := tr.RoundTrip(post(t, "http://vendor/v1/chat/completions", body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, paused := pausedUntil(l.Bucket("tokens")); paused || tr.Stats().Sent != 1 {
		t.Errorf("paused %v, %+v: want no pause and one attempt", paused, tr.Stats())
	}
	// The same 429 to a request that fits is a throttle.
	resp, err = tr.RoundTrip(post(t, "http://vendor/v1/chat/completions", streamCalls[2].body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, paused := pausedUntil(l.Bucket("tokens")); !paused {
		t.Error("a 429 to a request that fits did not pause the limiter")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestStainlessRequests: a request carrying X-Stainless-Retry-Count is not
// retried by the transport (its SDK retries), and a permit that cannot be
// had before its deadline comes back as a 429 saying not to retry.
func TestStainlessRequests(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	var sent int
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent++
		return &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"1"}}, Body: http.NoBody, Request: r}, nil
	})
	l := newLimiter(t, fc, 1, throttle.Per(1, time.Minute))
	tr := must(httpthrottle.NewTransport(base, httpthrottle.Shared(l)))
	req, _ := http.NewRequest(http.MethodGet, "http://vendor/", nil)
	req.Header.Set("X-Stainless-Retry-Count", "0")
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != 429 || sent != 1 {
		t.Fatalf("%v, %v after %d attempts; want the 429 after one", resp, err, sent)
	}
	// Paused: the next permit comes when the pause ends, a second away.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	ctx2, cancel2 := clockwork.WithTimeout(ctx, fc, 500*time.Millisecond)
	defer cancel2()
	resp, err = tr.RoundTrip(req.WithContext(ctx2))
	if err != nil {
		t.Fatalf("error %v, want a response", err)
	}
	b, rerr := io.ReadAll(resp.Body)
	// The body ends in the refusal itself, which the SDKs return.
	var we *throttle.WaitError
	if !errors.As(rerr, &we) || !errors.Is(rerr, context.DeadlineExceeded) {
		t.Errorf("reading the refusal's body: %v, want the *WaitError", rerr)
	}
	if resp.StatusCode != 429 || resp.Header.Get("X-Should-Retry") != "false" || resp.Header.Get(httpthrottle.RefusalHeader) != "deadline" ||
		!strings.Contains(string(b), "past the context deadline") || sent != 1 {
		t.Errorf("status %d, headers %v, body %s, %d sent", resp.StatusCode, resp.Header, b, sent)
	}
	// Without the header, the error itself.
	plain, _ := http.NewRequestWithContext(ctx2, http.MethodGet, "http://vendor/", nil)
	if _, err := tr.RoundTrip(plain); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want a WaitError", err)
	}
	// WithSDKRetries: retried like any other.
	sent = 0
	fc2 := clockwork.NewFakeClockAt(epoch)
	var attempts atomic.Int64
	base2 := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		attempts.Add(1)
		return base(r)
	})
	tr = must(httpthrottle.NewTransport(base2, httpthrottle.Shared(newLimiter(t, fc2, 10, throttle.Per(10, time.Second))), httpthrottle.WithSDKRetries(), httpthrottle.WithRetries(1)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := tr.RoundTrip(req.WithContext(context.Background()))
		if err == nil {
			resp.Body.Close()
		}
	}()
	if err := fc2.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fc2.Advance(time.Minute)
	<-done
	if n := attempts.Load(); n != 2 {
		t.Errorf("%d attempts with WithSDKRetries and one retry, want 2", n)
	}
}
