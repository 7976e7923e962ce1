package throttletest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/internal/headers"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// call sends a request to s and returns the response with its body read.
func call(t *testing.T, s *Server, method, path, key, body string) (*http.Response, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

const chat = `{"model":"gpt-test","messages":[{"role":"user","content":"12345678"}],"max_tokens":50}`

// TestDialects checks that what each dialect writes parses back, with
// internal/headers, to the vendor's state: after one chat call with a
// request quota of 3 and a token quota of 1000, 2 requests and 1000-59
// tokens remain (the estimate: 3 of text, 6 of message framing, 50 out).
func TestDialects(t *testing.T) {
	for d := IETF; d <= Anthropic; d++ {
		t.Run(d.String(), func(t *testing.T) {
			fc := clockwork.NewFakeClockAt(epoch)
			s := NewServer(Config{
				Requests: throttle.Per(3, 3*time.Second), Tokens: throttle.Per(1000, time.Minute),
				Dialect: d, Clock: fc,
			})
			defer s.Close()
			resp, _ := call(t, s, http.MethodPost, "/v1/chat/completions", "k", chat)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			sig := headers.Parse(resp.Header, fc.Now(), time.Hour)
			if len(sig.Malformed) != 0 {
				t.Errorf("malformed fields %v", sig.Malformed)
			}
			type q struct {
				name      string
				remaining int64
			}
			var got []q
			for _, x := range sig.Quotas {
				got = append(got, q{x.Name, x.Remaining})
			}
			// The reply is settled after the headers went out: they show
			// the estimate (9 in, 50 out) taken, not the usage.
			want := []q{{"requests", 2}, {"tokens", 941}}
			if d == XRateLimit || d == XRateLimitEpoch {
				want = []q{{"", 2}}
			}
			if !slices.Equal(got, want) {
				t.Errorf("quotas %+v, want %+v (headers %v)", got, want, resp.Header)
			}
			for _, x := range sig.Quotas {
				// Requests: 1 missing at 1/s; tokens: 59 at 1000/min.
				wantReset := time.Second
				if x.Name == "tokens" {
					wantReset = 3540 * time.Millisecond
					if d != OpenAI {
						wantReset = 4 * time.Second // whole seconds, rounded up
					}
				}
				if x.Reset != wantReset {
					t.Errorf("%q reset %v, want %v", x.Name, x.Reset, wantReset)
				}
			}
		})
	}
}

func TestRejections(t *testing.T) {
	for _, tt := range []struct {
		name       string
		cfg        Config
		retryAfter string
		ms         string
	}{
		{"ietf", Config{}, "1", ""},
		{"openai", Config{Dialect: OpenAI}, "1", "500"},
		{"huge", Config{HugeRetryAfter: true, Dialect: OpenAI}, "1000000", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fc := clockwork.NewFakeClockAt(epoch)
			cfg := tt.cfg
			cfg.Clock = fc
			cfg.Requests = throttle.Per(2, time.Second)
			s := NewServer(cfg)
			defer s.Close()
			call(t, s, http.MethodGet, "/v1/models", "", "")
			call(t, s, http.MethodGet, "/v1/models", "", "")
			resp, body := call(t, s, http.MethodGet, "/v1/models", "", "")
			if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != tt.retryAfter || resp.Header.Get("Retry-After-Ms") != tt.ms {
				t.Errorf("status %d, Retry-After %q, Retry-After-Ms %q; want 429, %q, %q",
					resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"), tt.retryAfter, tt.ms)
			}
			var e map[string]any
			if err := json.Unmarshal([]byte(body), &e); err != nil || e["error"] == nil {
				t.Errorf("error body %q", body)
			}
			if st := s.Stats(); st.Requests != 3 || st.Admitted != 2 || st.Throttled != 1 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestGarbageHeaders(t *testing.T) {
	for d := IETF; d <= Anthropic; d++ {
		fc := clockwork.NewFakeClockAt(epoch)
		s := NewServer(Config{Requests: throttle.Per(1, time.Second), Tokens: throttle.Per(100, time.Second), Dialect: d, Clock: fc, GarbageHeaders: true})
		call(t, s, http.MethodGet, "/", "", "")
		resp, _ := call(t, s, http.MethodGet, "/", "", "")
		s.Close()
		if resp.StatusCode != 429 {
			t.Fatalf("%v: status %d, want 429", d, resp.StatusCode)
		}
		sig := headers.Parse(resp.Header, fc.Now(), time.Hour)
		if sig.HasRetryAfter || len(sig.Quotas) != 0 || !slices.Contains(sig.Malformed, "Retry-After") {
			t.Errorf("%v: parsed %+v from %v, want nothing but malformed fields", d, sig, resp.Header)
		}
	}
}

func TestOutage(t *testing.T) {
	s := NewServer(Config{Outage503Every: 4, Outage503Length: 2, Outage503RetryAfter: 3 * time.Second})
	defer s.Close()
	var got []int
	for range 8 {
		resp, _ := call(t, s, http.MethodGet, "/", "", "")
		got = append(got, resp.StatusCode)
		if resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "3" {
			t.Errorf("503 with Retry-After %q, want 3", resp.Header.Get("Retry-After"))
		}
	}
	if want := []int{200, 200, 503, 503, 200, 200, 503, 503}; !slices.Equal(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	if st := s.Stats(); st.Unavailable != 4 || st.Admitted != 4 {
		t.Errorf("stats %+v", st)
	}
}

func TestLatency(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	s := NewServer(Config{Clock: fc, Latency: 2 * time.Second})
	defer s.Close()
	done := make(chan int)
	go func() {
		resp, _ := call(t, s, http.MethodGet, "/", "", "")
		done <- resp.StatusCode
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("answered before the latency passed")
	default:
	}
	fc.Advance(2 * time.Second)
	if code := <-done; code != 200 {
		t.Errorf("status %d", code)
	}
}

func TestAPIKeys(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	s := NewServer(Config{Requests: throttle.Per(1, time.Minute), Clock: fc})
	defer s.Close()
	for _, tt := range []struct {
		key    string
		status int
	}{{"a", 200}, {"a", 429}, {"b", 200}, {"", 200}, {"", 429}} {
		if resp, _ := call(t, s, http.MethodGet, "/", tt.key, ""); resp.StatusCode != tt.status {
			t.Errorf("key %q: status %d, want %d", tt.key, resp.StatusCode, tt.status)
		}
	}
	req := httptestRequest("X-Api-Key", "anthropic-key")
	if got := APIKey(req); got != "anthropic-key" {
		t.Errorf("APIKey = %q", got)
	}
}

func httptestRequest(k, v string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	r.Header.Set(k, v)
	return r
}

// TestLLMReplies checks both API shapes and the settling of the token
// quota to the usage.
func TestLLMReplies(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	s := NewServer(Config{Tokens: throttle.Per(100, time.Minute), Clock: fc, ReplyTokens: 5})
	defer s.Close()
	for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		resp, body := call(t, s, http.MethodPost, path, "k", chat)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: status %d, %s", path, resp.StatusCode, body)
		}
		u, ok := llm.ParseUsage([]byte(body))
		if !ok || u != (llm.Usage{Input: 9, Output: 5}) {
			t.Errorf("%s: usage %+v (%v) in %s", path, u, ok, body)
		}
	}
	// Each call reserved 59 and settled to 14: 72 left, so a call
	// reserving 59 still passes; without settling the second would not.
	if resp, _ := call(t, s, http.MethodPost, "/v1/chat/completions", "k", chat); resp.StatusCode != 200 {
		t.Errorf("third call: status %d, want 200", resp.StatusCode)
	}
	if st := s.Stats(); st.Tokens != 42 || st.Admitted != 3 {
		t.Errorf("stats %+v", st)
	}
	if resp, _ := call(t, s, http.MethodPost, "/v1/chat/completions", "k2", "not json"); resp.StatusCode != 400 {
		t.Errorf("bad body: status %d, want 400", resp.StatusCode)
	}
}

func TestParseDialect(t *testing.T) {
	for d := IETF; d <= Anthropic; d++ {
		if got, err := ParseDialect(strings.ToUpper(d.String())); err != nil || got != d {
			t.Errorf("ParseDialect(%q) = %v, %v", d, got, err)
		}
	}
	if _, err := ParseDialect("github"); err == nil {
		t.Error("ParseDialect accepted an unknown name")
	}
}

func TestInvalidConfigPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a negative rate")
		}
	}()
	NewServer(Config{Requests: throttle.Per(-1, time.Second)})
}

func TestNewHandler(t *testing.T) {
	s, h := NewHandler(Config{Requests: throttle.Per(1, time.Minute)})
	defer s.Close() // nothing to close: must not panic
	for i, want := range []int{200, 429} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/x", nil))
		if w.Code != want {
			t.Errorf("request %d: status %d, want %d", i+1, w.Code, want)
		}
	}
	if st := s.Stats(); st.Requests != 2 || st.Throttled != 1 || s.URL != "" {
		t.Errorf("stats %+v, URL %q", st, s.URL)
	}
}
