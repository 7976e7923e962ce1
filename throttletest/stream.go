package throttletest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/headers"
)

// streamWord is one token of streamed text: 4 characters, so that a client
// counting 4 characters a token counts the stream's text exactly.
const streamWord = "tok "

// stream answers a streamed LLM call in the shape's event format: the reply
// of out tokens in chunks of StreamChunkTokens, StreamInterval apart, each
// written and flushed on its own.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, sh shape, req *llmRequest, in, out int64) {
	sse := sh != geminiShape || r.URL.Query().Get("alt") == "sse"
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	if sse {
		h.Set("Content-Type", "text/event-stream")
	} else {
		h.Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	first := true
	// emit writes one event (SSE) or one element of the JSON array.
	emit := func(event string, v any) bool {
		if !first && s.cfg.StreamInterval > 0 && !s.sleep(r, s.cfg.StreamInterval) {
			return false
		}
		data, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		var b strings.Builder
		switch {
		case !sse && first:
			b.WriteString("[")
		case !sse:
			b.WriteString(",\r\n")
		case sh == geminiShape:
			// Gemini ends its lines with CRLF.
			fmt.Fprintf(&b, "data: %s\r\n\r\n", data)
		case event != "":
			fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", event, data)
		default:
			fmt.Fprintf(&b, "data: %s\n\n", data)
		}
		if !sse {
			b.Write(data)
		}
		first = false
		if _, err := w.Write([]byte(b.String())); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	chunk := max(int64(s.cfg.StreamChunkTokens), 1)
	if s.cfg.StreamChunkTokens == 0 {
		chunk = 4
	}
	var sent int64
	// pieces calls f with each piece of text and the tokens sent so far.
	pieces := func(f func(text string, sent int64) bool) bool {
		for sent < out {
			n := min(chunk, out-sent)
			sent += n
			if !f(strings.Repeat(streamWord, int(n)), sent) {
				return false
			}
		}
		return true
	}
	now := s.clock.Now().Unix()
	switch sh {
	case chatShape:
		var usage any // with include_usage, every chunk has "usage": null
		chunkOf := func(delta map[string]any, finish any) map[string]any {
			c := map[string]any{
				"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": now, "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
			}
			if req.StreamOptions.IncludeUsage {
				c["usage"] = usage
			}
			return c
		}
		ok := emit("", chunkOf(map[string]any{"role": "assistant", "content": ""}, nil)) &&
			pieces(func(text string, _ int64) bool { return emit("", chunkOf(map[string]any{"content": text}, nil)) }) &&
			emit("", chunkOf(map[string]any{}, "stop"))
		if ok && req.StreamOptions.IncludeUsage {
			usage = map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
			c := chunkOf(nil, nil)
			c["choices"] = []any{}
			ok = emit("", c)
		}
		if ok {
			w.Write([]byte("data: [DONE]\n\n"))
		}
	case responsesShape:
		seq := 0
		ev := func(typ string, fields map[string]any) bool {
			fields["type"], fields["sequence_number"] = typ, seq
			seq++
			return emit(typ, fields)
		}
		var full strings.Builder
		_ = ev("response.created", map[string]any{"response": s.responseObject(req, "in_progress", "", -1, -1)}) &&
			pieces(func(text string, _ int64) bool {
				full.WriteString(text)
				return ev("response.output_text.delta", map[string]any{"item_id": "msg_fake", "output_index": 0, "content_index": 0, "delta": text})
			}) &&
			ev("response.output_text.done", map[string]any{"item_id": "msg_fake", "output_index": 0, "content_index": 0, "text": full.String()}) &&
			ev("response.completed", map[string]any{"response": s.responseObject(req, "completed", full.String(), in, out)})
	case messagesShape:
		_ = emit("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_fake", "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": 1},
		}}) &&
			emit("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}) &&
			emit("ping", map[string]any{"type": "ping"}) &&
			pieces(func(text string, _ int64) bool {
				return emit("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
			}) &&
			emit("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}) &&
			emit("message_delta", map[string]any{"type": "message_delta",
				"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
				"usage": map[string]any{"output_tokens": out}}) &&
			emit("message_stop", map[string]any{"type": "message_stop"})
	case geminiShape:
		ok := pieces(func(text string, sent int64) bool {
			finish := ""
			if sent == out {
				finish = "STOP"
			}
			return emit("", geminiChunk(req, text, finish, in, sent))
		})
		if out == 0 {
			ok = emit("", geminiChunk(req, "", "STOP", in, 0))
		}
		if ok && !sse {
			w.Write([]byte("]"))
		}
	}
}

// responseObject is an OpenAI Responses API response; in < 0 leaves its
// usage null.
func (s *Server) responseObject(req *llmRequest, status, text string, in, out int64) map[string]any {
	o := map[string]any{
		"id": "resp_fake", "object": "response", "created_at": s.clock.Now().Unix(), "status": status,
		"model": req.Model, "output": []any{}, "usage": nil, "error": nil, "incomplete_details": nil,
		"instructions": nil, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"temperature": 1, "top_p": 1,
	}
	if status == "completed" {
		o["output"] = []any{map[string]any{
			"type": "message", "id": "msg_fake", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
		}}
	}
	if in >= 0 {
		o["usage"] = map[string]any{
			"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": in + out,
		}
	}
	return o
}

// geminiChunk is a Gemini GenerateContentResponse with the counts so far.
func geminiChunk(req *llmRequest, text, finish string, in, out int64) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	return map[string]any{
		"candidates":    []any{cand},
		"usageMetadata": map[string]any{"promptTokenCount": in, "candidatesTokenCount": out, "totalTokenCount": in + out},
		"modelVersion":  req.Model,
	}
}

// refuseTooLarge answers an LLM call whose tokens exceed the token quota's
// capacity, which no wait can admit, as the vendors do: OpenAI with a 429
// "Request too large" that carries no Retry-After and the quota headers
// (tokens remaining), the others with a 413 request_too_large. It spends
// nothing.
func (s *Server) refuseTooLarge(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.Tokens == (throttle.Rate{}) || !isLLM(r) || r.Body == nil {
		return false
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	// The prompt and the max tokens the call asks for: a call that sets
	// none is not refused for the default the quota reserves (it counts 1).
	c := s.llm()
	c.DefaultMaxTokens = 1
	in, out, ok := c.Estimate(body)
	limit := burst(s.cfg.TokenBurst, s.cfg.Tokens)
	if !ok || in+out <= limit {
		return false
	}
	s.tooLarge.Add(1)
	st := s.keys.Limiter(APIKey(r)).Status(nil)
	s.writeHeaders(w.Header(), st)
	var req llmRequest
	json.Unmarshal(body, &req)
	if s.cfg.Dialect == OpenAI {
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("Request too large for %s in organization org-fake on tokens per min (TPM): Limit %d, Requested %d. "+
				"The input or output tokens must be reduced in order to run successfully.", req.Model, limit, in+out),
			"type": "tokens", "param": nil, "code": "rate_limit_exceeded",
		}})
		return true
	}
	writeError(w, s.cfg.Dialect, http.StatusRequestEntityTooLarge, "request_too_large",
		fmt.Sprintf("the request's %d tokens exceed the limit of %d", in+out, limit))
	return true
}

// refuseExhausted answers every LLM call as OpenAI does once an account's
// credit is spent: 429 insufficient_quota, with no Retry-After.
func (s *Server) refuseExhausted(w http.ResponseWriter, r *http.Request) bool {
	if !s.cfg.QuotaExhausted && s.cfg.RefuseAllRetryAfter <= 0 || !isLLM(r) {
		return false
	}
	s.throttled.Add(1)
	if d := s.cfg.RefuseAllRetryAfter; d > 0 {
		headers.SetRetryAfterMs(w.Header(), d)
		headers.SetRetryAfter(w.Header(), d)
		writeError(w, s.cfg.Dialect, http.StatusTooManyRequests, "rate_limit_exceeded", "Rate limit reached; please try again later.")
		return true
	}
	writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{
		"message": "You exceeded your current quota, please check your plan and billing details.",
		"type":    "insufficient_quota", "param": nil, "code": "insufficient_quota",
	}})
	return true
}
