package throttletest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
)

// llm is how the vendor counts the tokens of a call: as a client using
// llm.Config with its defaults estimates them (or with Config.Tokenizer),
// so that a client that settles against the reported usage stays in step
// with the vendor.
func (s *Server) llm() llm.Config {
	return llm.Config{Tokenizer: s.cfg.Tokenizer}
}

// The API shapes the vendor answers.
type shape uint8

const (
	notLLM         shape = iota
	chatShape            // OpenAI Chat Completions: POST .../chat/completions
	responsesShape       // OpenAI Responses: POST .../responses
	messagesShape        // Anthropic Messages: POST .../messages
	geminiShape          // Gemini: POST .../models/{model}:generateContent or :streamGenerateContent
)

func shapeOf(r *http.Request) shape {
	if r.Method != http.MethodPost {
		return notLLM
	}
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return chatShape
	case strings.HasSuffix(p, "/responses"):
		return responsesShape
	case strings.HasSuffix(p, "/messages"):
		return messagesShape
	case strings.HasSuffix(p, ":generateContent"), strings.HasSuffix(p, ":streamGenerateContent"):
		return geminiShape
	}
	return notLLM
}

// isLLM reports whether r is an LLM call of one of the shapes the vendor
// answers.
func isLLM(r *http.Request) bool { return shapeOf(r) != notLLM }

// cost is what a request spends: an LLM call one request and its estimated
// tokens, any other request one request and no tokens.
// A vendor without a token quota counts an LLM call as one request:
// llm.Config refuses a Gate with no limit that counts tokens.
func (s *Server) cost(r *http.Request, g throttle.Gate) ([]int64, error) {
	if isLLM(r) && s.cfg.Tokens != (throttle.Rate{}) {
		return s.llm().Cost(r, g)
	}
	limits := g.Limits()
	costs := make([]int64, len(limits))
	for i, l := range limits {
		if l.Name == "requests" {
			costs[i] = 1
		}
	}
	return costs, nil
}

// llmRequest is what the vendor reads of an LLM call.
type llmRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// serveAPI answers an admitted request.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	s.admitted.Add(1)
	if s.cfg.Latency > 0 && !s.sleep(r, s.cfg.Latency) {
		return
	}
	sh := shapeOf(r)
	if sh == notLLM {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "path": r.URL.Path})
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req llmRequest
	in, maxOut, ok := s.llm().Estimate(body)
	if !ok || json.Unmarshal(body, &req) != nil {
		writeError(w, s.cfg.Dialect, http.StatusBadRequest, "invalid_request_error", "the body is not a JSON object")
		return
	}
	if sh == geminiShape {
		path := r.URL.Path
		req.Model = path[strings.LastIndex(path, "/")+1 : strings.LastIndex(path, ":")]
		req.Stream = strings.HasSuffix(path, ":streamGenerateContent")
	}
	out := min(s.replyTokens(), maxOut)
	s.settle(w, in+out)
	if req.Stream {
		s.stream(w, r, sh, &req, in, out)
		return
	}
	text := strings.TrimSpace(strings.Repeat("ok ", int(out)))
	switch sh {
	case messagesShape:
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "msg_fake", "type": "message", "role": "assistant", "model": req.Model,
			"content":     []any{map[string]any{"type": "text", "text": text}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": out},
		})
	case responsesShape:
		writeJSON(w, http.StatusOK, s.responseObject(&req, "completed", text, in, out))
	case geminiShape:
		writeJSON(w, http.StatusOK, geminiChunk(&req, text, "STOP", in, out))
	default:
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "chatcmpl-fake", "object": "chat.completion", "created": s.clock.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{
				"index": 0, "finish_reason": "stop", "logprobs": nil,
				"message": map[string]any{"role": "assistant", "content": text, "refusal": nil},
			}},
			"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
		})
	}
}

// sleep waits d on the vendor's clock, or until the client goes away.
func (s *Server) sleep(r *http.Request, d time.Duration) bool {
	t := s.clock.NewTimer(d)
	select {
	case <-t.Chan():
		return true
	case <-r.Context().Done():
		t.Stop()
		return false
	}
}

func (s *Server) replyTokens() int64 {
	if s.cfg.ReplyTokens > 0 {
		return s.cfg.ReplyTokens
	}
	return 16
}

// settle corrects the token cost of the call to what it used. The token
// quota, when there is one, is the last of the key's limits.
func (s *Server) settle(w http.ResponseWriter, used int64) {
	s.tokens.Add(used)
	p := httpthrottle.RequestPermit(w)
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
