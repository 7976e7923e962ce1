package throttletest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// TestStreamShapes: each API's streamed reply has its content type, its
// framing and its usage where the API puts it.
func TestStreamShapes(t *testing.T) {
	s := NewServer(Config{ReplyTokens: 6, StreamChunkTokens: 4, Clock: clockwork.NewFakeClockAt(epoch)})
	defer s.Close()
	for _, tt := range []struct {
		path, body, ctype string
		has               []string
	}{
		{"/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[]}`, "text/event-stream",
			[]string{`data: {"choices":[{"delta":{"content":"tok tok tok tok "}`, `"choices":[],`, `"completion_tokens":6`, "data: [DONE]\n\n"}},
		{"/v1/chat/completions", `{"model":"m","stream":true,"messages":[]}`, "text/event-stream",
			[]string{`"content":"tok tok "`, "data: [DONE]"}},
		{"/v1/responses", `{"model":"m","stream":true,"input":"x"}`, "text/event-stream",
			[]string{"event: response.created\ndata: ", "event: response.output_text.delta", `"output_tokens":6`, "event: response.completed"}},
		{"/v1/messages", `{"model":"m","stream":true,"messages":[],"max_tokens":10}`, "text/event-stream",
			[]string{"event: message_start", `"output_tokens":1`, "event: ping", `"text":"tok tok tok tok ","type":"text_delta"`, `"usage":{"output_tokens":6}`, "event: message_stop"}},
		{"/v1beta/models/g:streamGenerateContent?alt=sse", `{"contents":[]}`, "text/event-stream",
			[]string{"data: {\"candidates\"", "\r\n\r\n", `"candidatesTokenCount":6`, `"finishReason":"STOP"`}},
		{"/v1beta/models/g:streamGenerateContent", `{"contents":[]}`, "application/json",
			[]string{"[{\"candidates\"", "},\r\n{", `"candidatesTokenCount":6`, `"modelVersion":"g"`, "}]"}},
	} {
		resp, body := call(t, s, http.MethodPost, tt.path, "k", tt.body)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), tt.ctype) {
			t.Errorf("%s: status %d, Content-Type %q", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		for _, h := range tt.has {
			if !strings.Contains(body, h) {
				t.Errorf("%s %s: no %q in\n%s", tt.path, tt.body, h, body)
			}
		}
	}
}

// TestTooLarge: a call above the token quota is refused, in OpenAI's words
// with a 429 and the quota headers, in the others' with a 413, spending
// nothing; a call that sets no max tokens is not refused for the default.
func TestTooLarge(t *testing.T) {
	huge := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("word ", 200) + `"}],"max_tokens":10}`
	for _, d := range []Dialect{OpenAI, Anthropic} {
		s := NewServer(Config{Tokens: throttle.Per(100, time.Minute), Requests: throttle.Per(10, time.Minute), Dialect: d, Clock: clockwork.NewFakeClockAt(epoch)})
		resp, body := call(t, s, http.MethodPost, "/v1/chat/completions", "k", huge)
		want := 413
		if d == OpenAI {
			want = 429
			if !strings.Contains(body, "Request too large for m") || resp.Header.Get("X-Ratelimit-Remaining-Tokens") != "100" || resp.Header.Get("Retry-After") != "" {
				t.Errorf("%v: body %s, headers %v", d, body, resp.Header)
			}
		}
		if resp.StatusCode != want {
			t.Errorf("%v: status %d, want %d", d, resp.StatusCode, want)
		}
		if resp, _ := call(t, s, http.MethodPost, "/v1/chat/completions", "k", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
			t.Errorf("%v: a call without max_tokens: status %d", d, resp.StatusCode)
		}
		if st := s.Stats(); st.TooLarge != 1 || st.Admitted != 1 {
			t.Errorf("%v: stats %+v", d, st)
		}
		s.Close()
	}
	// A spent account refuses everything.
	s := NewServer(Config{QuotaExhausted: true})
	defer s.Close()
	if resp, body := call(t, s, http.MethodPost, "/v1/chat/completions", "k", huge); resp.StatusCode != 429 || !strings.Contains(body, "insufficient_quota") {
		t.Errorf("status %d, body %s", resp.StatusCode, body)
	}
}
