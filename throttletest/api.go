package throttletest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/throttlekit/throttle"
)

// llm is how the vendor counts the tokens of a call: as a client using
// throttle.LLM with its defaults estimates them, so that a client that
// settles against the reported usage stays in step with the vendor.
var llm = throttle.LLM{}

// isLLM reports whether r is an LLM call: an OpenAI-style chat completion or
// an Anthropic-style message.
func isLLM(r *http.Request) bool {
	return r.Method == http.MethodPost &&
		(strings.HasSuffix(r.URL.Path, "/chat/completions") || strings.HasSuffix(r.URL.Path, "/messages"))
}

// cost is what a request spends: an LLM call one request and its estimated
// tokens, any other request one request and no tokens.
func (s *Server) cost(r *http.Request, l *throttle.Limiter) ([]int64, error) {
	if isLLM(r) {
		return llm.Cost(r, l)
	}
	bs := l.Buckets()
	costs := make([]int64, len(bs))
	for i, b := range bs {
		if b.Name() == "requests" {
			costs[i] = 1
		}
	}
	return costs, nil
}

// serveAPI answers an admitted request.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	s.admitted.Add(1)
	if s.cfg.Latency > 0 {
		t := s.clock.NewTimer(s.cfg.Latency)
		select {
		case <-t.Chan():
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if !isLLM(r) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "path": r.URL.Path})
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req struct {
		Model string `json:"model"`
	}
	in, maxOut, ok := llm.Estimate(body)
	if !ok || json.Unmarshal(body, &req) != nil {
		writeError(w, s.cfg.Dialect, http.StatusBadRequest, "invalid_request_error", "the body is not a JSON object")
		return
	}
	out := min(s.replyTokens(), maxOut)
	s.settle(r, in+out)
	text := strings.TrimSpace(strings.Repeat("ok ", int(out)))
	if strings.HasSuffix(r.URL.Path, "/messages") {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "msg_fake", "type": "message", "role": "assistant", "model": req.Model,
			"content":     []any{map[string]any{"type": "text", "text": text}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": out},
		})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": s.clock.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": text, "refusal": nil},
		}},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
}

func (s *Server) replyTokens() int64 {
	if s.cfg.ReplyTokens > 0 {
		return s.cfg.ReplyTokens
	}
	return 16
}

// settle corrects the token cost of the call to what it used. The token
// quota, when there is one, is the last of the key's limits.
func (s *Server) settle(r *http.Request, used int64) {
	s.tokens.Add(used)
	p := throttle.RequestPermit(r)
	if p == nil || s.cfg.Tokens == (throttle.Rate{}) {
		return
	}
	actual := p.Costs()
	actual[len(actual)-1] = used
	p.Settle(actual...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError writes an error in the vendor's style.
func writeError(w http.ResponseWriter, d Dialect, status int, kind, msg string) {
	switch d {
	case Anthropic:
		writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
	default:
		writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": kind, "param": nil, "code": kind}})
	}
}
