package llm_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/throttletest"
)

func TestLLMEstimate(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		in, out int64
		ok      bool
	}{
		{"openai chat", `{"model":"gpt-4o","messages":[{"role":"user","content":"12345678"}],"max_tokens":100}`, 9, 100, true},
		{"openai parts", `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"123456789"}]}],"max_completion_tokens":7}`, 9, 7, true},
		{"anthropic", `{"model":"claude","system":"abcd","messages":[{"role":"user","content":"efgh"}],"max_tokens":1024}`, 8, 1024, true},
		{"responses", `{"model":"gpt-4o","input":"abcdefgh","instructions":"ij","max_output_tokens":5}`, 3, 5, true},
		{"runes not bytes", `{"messages":[{"content":"éééé"}],"max_tokens":1}`, 8, 1, true},
		{"no max", `{"messages":[{"content":"abcd"}]}`, 7, 4096, true},
		{"empty prompt", `{"model":"m","max_tokens":3}`, 0, 3, true},
		{"negative max ignored", `{"max_tokens":-3}`, 0, 4096, true},
		{"not an object", `[1,2]`, 0, 0, false},
		{"null", `null`, 0, 0, false},
		{"not JSON", `hello`, 0, 0, false},
	}
	for _, tt := range tests {
		in, out, ok := llm.Config{}.Estimate([]byte(tt.body))
		if in != tt.in || out != tt.out || ok != tt.ok {
			t.Errorf("%s: Estimate = %d, %d, %v; want %d, %d, %v", tt.name, in, out, ok, tt.in, tt.out, tt.ok)
		}
	}
	c := llm.Config{CharsPerToken: 2, DefaultMaxTokens: 9}
	if in, out, _ := c.Estimate([]byte(`{"prompt":"abcde"}`)); in != 3 || out != 9 {
		t.Errorf("custom LLM: Estimate = %d, %d; want 3, 9", in, out)
	}
}

func TestParseUsage(t *testing.T) {
	tests := []struct {
		name string
		body string
		want llm.Usage
		ok   bool
	}{
		{"openai chat", `{"id":"x","usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`, llm.Usage{Input: 12, Output: 5}, true},
		{"openai responses", `{"usage":{"input_tokens":3,"output_tokens":4,"total_tokens":7}}`, llm.Usage{Input: 3, Output: 4}, true},
		{"anthropic", `{"usage":{"input_tokens":10,"cache_creation_input_tokens":6,"cache_read_input_tokens":100,"output_tokens":2}}`, llm.Usage{Input: 16, Output: 2}, true},
		{"no usage", `{"id":"x"}`, llm.Usage{}, false},
		{"empty usage", `{"usage":{}}`, llm.Usage{}, false},
		{"null usage", `{"usage":null}`, llm.Usage{}, false},
		{"negative", `{"usage":{"prompt_tokens":-1,"completion_tokens":5}}`, llm.Usage{}, false},
		{"wrong type", `{"usage":{"prompt_tokens":"12"}}`, llm.Usage{}, false},
		{"not JSON", `data: {}`, llm.Usage{}, false},
	}
	for _, tt := range tests {
		got, ok := llm.ParseUsage([]byte(tt.body))
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: ParseUsage = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestLLMCost(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	mk := func(name string, capacity int64) *throttle.Bucket {
		b, err := throttle.New(capacity, throttle.Per(capacity, time.Minute), throttle.WithClock(fc), throttle.WithName(name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	l, err := throttle.NewLimiter(mk("requests", 10), mk("tokens", 1000), mk("input-tokens", 500), mk("output-tokens", 50), mk("daily", 10))
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"model":"m","messages":[{"role":"user","content":"12345678"}],"max_tokens":100}`

	t.Run("client request", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodPost, "http://vendor/v1/chat/completions", strings.NewReader(body))
		req.RequestURI = "" // a client request
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
		orig := req.Body
		costs, err := llm.Config{}.Cost(req, l)
		if err != nil {
			t.Fatal(err)
		}
		// Output capped at the capacity of output-tokens.
		if want := []int64{1, 109, 9, 50, 1}; !equal(costs, want) {
			t.Errorf("costs %v, want %v", costs, want)
		}
		if req.Body != orig {
			t.Error("the client request's body was replaced")
		}
		if b, _ := io.ReadAll(req.Body); string(b) != body {
			t.Errorf("the body now reads %q", b)
		}
	})

	t.Run("client request without GetBody", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, "http://vendor/v1/chat/completions", io.NopCloser(strings.NewReader(body)))
		req.ContentLength = int64(len(body))
		costs, err := llm.Config{}.Cost(req, l)
		if err != nil {
			t.Fatal(err)
		}
		// Estimated from the length: 80 bytes are 20 tokens, plus 4096.
		if want := []int64{1, 1000, 20, 50, 1}; !equal(costs, want) {
			t.Errorf("costs %v, want %v", costs, want)
		}
	})

	t.Run("server request", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		costs, err := llm.Config{TokenLimits: []string{"tokens", "daily"}}.Cost(req, l)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int64{1, 109, 9, 50, 10}; !equal(costs, want) {
			t.Errorf("costs %v, want %v", costs, want)
		}
		if b, _ := io.ReadAll(req.Body); string(b) != body {
			t.Errorf("the server request's body now reads %q, want it put back", b)
		}
	})

	t.Run("no body", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, "http://vendor/v1/models", nil)
		costs, _ := llm.Config{}.Cost(req, l)
		if want := []int64{1, 0, 0, 0, 1}; !equal(costs, want) {
			t.Errorf("costs %v, want %v", costs, want)
		}
	})
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTransportSettlesLLM: a call reserves its estimate and is settled to the
// usage the vendor reports, with the caller still reading the whole body.
func TestTransportSettlesLLM(t *testing.T) {
	fc := clockwork.NewFakeClockAt(epoch)
	vendor := throttletest.NewServer(throttletest.Config{
		Requests: throttle.Per(100, time.Minute), Tokens: throttle.Per(10000, time.Minute),
		Clock: fc, ReplyTokens: 7, Dialect: throttletest.OpenAI,
	})
	defer vendor.Close()
	l := twoBuckets(t, fc)
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithAccounting(llm.Config{DefaultMaxTokens: 10})))
	body := `{"model":"m","messages":[{"role":"user","content":"12345678"}],"max_tokens":100}`
	req, _ := http.NewRequest(http.MethodPost, vendor.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, error %v", resp.StatusCode, err)
	}
	u, ok := llm.ParseUsage(got)
	if !ok || u != (llm.Usage{Input: 9, Output: 7}) {
		t.Fatalf("the caller read usage %+v (%v) from %q, want 9 in and 7 out", u, ok, got)
	}
	// Reserved 109, settled to 16: 1000-16 left, unless the vendor's
	// remaining count (10000 capacity) was lower, which it is not.
	if lvl := bucketsOf(l)[1].Status().Level; lvl != 984 {
		t.Errorf("tokens level %v, want 984", lvl)
	}
	if st := vendor.Stats(); st.Tokens != 16 {
		t.Errorf("the vendor counted %d tokens, want 16", st.Tokens)
	}

	// A refused call costs no tokens, but the request stays spent.
	bad, _ := http.NewRequest(http.MethodPost, vendor.URL+"/v1/chat/completions", bytes.NewReader([]byte(`[]`)))
	resp, err = tr.RoundTrip(bad)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	if r, tok := bucketsOf(l)[0].Status().Level, bucketsOf(l)[1].Status().Level; r != 8 || tok != 984 {
		t.Errorf("levels %v requests, %v tokens; want 8 and 984", r, tok)
	}
}

func FuzzLLMEstimate(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}],"max_tokens":100}`,
		`{"system":[{"type":"text","text":"be brief"}],"messages":[],"max_tokens":1e300}`,
		`{"input":["a","b"],"max_output_tokens":-1}`,
		`{"max_completion_tokens":9007199254740993}`,
		`[]`, `null`, `{`, ``, `{"a":{"b":{"c":["\u00e9\ud800"]}}}`,
		`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==","detail":"high"}}]}]}`,
		`{"messages":[{"content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`,
		`{"messages":[{"content":[{"type":"input_audio","input_audio":{"data":"UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=","format":"wav"}}]}]}`,
		`{"messages":[{"content":[{"type":"document","source":{"type":"base64","data":"JVBERi0xLjQKL1R5cGUgL1BhZ2UK"}}]}]}`,
		`{"contents":[{"parts":[{"inlineData":{"mimeType":"image/jpeg","data":"/9j/"}}]}],"generationConfig":{"maxOutputTokens":7}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		in, out, ok := llm.Config{}.Estimate([]byte(body))
		if in < 0 || out < 0 {
			t.Errorf("Estimate(%q) = %d, %d", body, in, out)
		}
		if !ok && (in != 0 || out != 0) {
			t.Errorf("Estimate(%q) = %d, %d with ok false", body, in, out)
		}
	})
}

func FuzzParseUsage(f *testing.F) {
	for _, s := range []string{
		`{"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`,
		`{"usage":{"input_tokens":10,"cache_creation_input_tokens":6,"output_tokens":2}}`,
		`{"usage":{"input_tokens":9223372036854775807,"cache_creation_input_tokens":9223372036854775807}}`,
		`{"usage":{"prompt_tokens":-1}}`, `{"usage":[]}`, `{"usage":null}`, `{}`, `x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		u, ok := llm.ParseUsage([]byte(body))
		if ok && (u.Input < 0 || u.Output < 0) {
			t.Errorf("ParseUsage(%q) = %+v", body, u)
		}
		if !ok && u != (llm.Usage{}) {
			t.Errorf("ParseUsage(%q) = %+v with ok false", body, u)
		}
	})
}
