package sdktest_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throttlekit/throttle/httpthrottle"
)

// quotaVendor is a loopback LLM vendor that holds its token quota as
// OpenAI's and Anthropic's docs describe it: a call reserves its prompt
// plus its max_tokens when it is admitted, and the part it did not use is
// given back when its reply (streamed or not) ends. It sends its rate
// headers at admission, as those vendors do, and records every attempt, so
// that a test can tell how far apart the attempts of one call were and how
// many tokens were offered beyond what the quota held.
//
// throttletest's vendor settles a call at admission instead, which hides
// the difference between a stream's headers and its usage.
type quotaVendor struct {
	URL string
	srv *httptest.Server

	// refuse, when set, answers every call 429 with these headers (none
	// for a bare refusal): a quota the vendor keeps refusing.
	refuse http.Header
	// reply is the completion tokens of each reply; chunks the number of
	// chunks a streamed reply comes in, interval apart.
	reply    int64
	chunks   int
	interval time.Duration

	mu       sync.Mutex
	capacity float64 // tokens
	rate     float64 // tokens a second
	level    float64
	last     time.Time
	attempts []vendorAttempt
	beyond   int64 // tokens asked for beyond the level, summed over refusals
	refused  int64 // 429s
	admitted int64
}

// vendorAttempt is one request the vendor received.
type vendorAttempt struct {
	call  string // a digest of the body: every attempt of one call has the same
	at    time.Time
	retry string // X-Stainless-Retry-Count
}

// newQuotaVendor starts a vendor with a token quota of capacity refilled
// at rate a second; rate 0 means no quota.
func newQuotaVendor(t testing.TB, capacity, rate float64) *quotaVendor {
	v := &quotaVendor{capacity: capacity, rate: rate, level: capacity, last: time.Now(), reply: 150, chunks: 10}
	v.srv = httptest.NewServer(http.HandlerFunc(v.serve))
	v.URL = v.srv.URL
	t.Cleanup(v.srv.Close)
	return v
}

// estimate counts a body's tokens as the clients' LLM does, so that a
// reservation is the same on both sides.
func estimate(body []byte) (in, out int64) {
	in, out, _ = httpthrottle.LLM{}.Estimate(body)
	return in, out
}

func (v *quotaVendor) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	sum := sha256.Sum256(body)
	anthropicAPI := strings.HasSuffix(r.URL.Path, "/messages")
	in, maxOut := estimate(body)
	need := in + maxOut
	now := time.Now()

	v.mu.Lock()
	v.attempts = append(v.attempts, vendorAttempt{call: fmt.Sprintf("%x", sum[:8]), at: now, retry: r.Header.Get("X-Stainless-Retry-Count")})
	if v.refuse != nil {
		v.refused++
		v.mu.Unlock()
		for k, vs := range v.refuse {
			w.Header()[k] = vs
		}
		writeVendorError(w, anthropicAPI, "rate_limit_exceeded", "rate limit reached")
		return
	}
	if v.rate > 0 {
		v.level = min(v.capacity, v.level+now.Sub(v.last).Seconds()*v.rate)
		v.last = now
		if v.level < float64(need) {
			v.refused++
			missing := float64(need) - v.level
			v.beyond += int64(missing + 0.5)
			v.setHeaders(w.Header(), anthropicAPI, now)
			v.mu.Unlock()
			w.Header().Set("Retry-After-Ms", fmt.Sprint(int64(missing/v.rate*1000)+1))
			writeVendorError(w, anthropicAPI, "rate_limit_exceeded", "rate limit reached for tokens")
			return
		}
		v.level -= float64(need)
	}
	v.admitted++
	v.setHeaders(w.Header(), anthropicAPI, now)
	v.mu.Unlock()

	out := min(v.reply, maxOut)
	var req struct {
		Stream bool `json:"stream"`
	}
	json.Unmarshal(body, &req)
	if req.Stream {
		v.stream(w, anthropicAPI, in, out)
	} else if anthropicAPI {
		vendorJSON(w, map[string]any{
			"id": "msg_q", "type": "message", "role": "assistant", "model": "m",
			"content":     []any{map[string]any{"type": "text", "text": "ok"}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": out},
		})
	} else {
		vendorJSON(w, map[string]any{
			"id": "chatcmpl-q", "object": "chat.completion", "created": 0, "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
				"message": map[string]any{"role": "assistant", "content": "ok", "refusal": nil}}},
			"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
		})
	}
	// The reply has ended: what it did not use goes back to the quota.
	v.mu.Lock()
	if v.rate > 0 {
		v.level = min(v.capacity, v.level+float64(need-in-out))
	}
	v.mu.Unlock()
}

// setHeaders writes the quota's state in the vendor's dialect; v.mu held.
func (v *quotaVendor) setHeaders(h http.Header, anthropicAPI bool, now time.Time) {
	if v.rate <= 0 {
		return
	}
	limit, remaining := int64(v.capacity), max(int64(v.level), 0)
	toFull := time.Duration((v.capacity - v.level) / v.rate * float64(time.Second))
	if anthropicAPI {
		h.Set("anthropic-ratelimit-tokens-limit", fmt.Sprint(limit))
		h.Set("anthropic-ratelimit-tokens-remaining", fmt.Sprint((remaining+500)/1000*1000))
		h.Set("anthropic-ratelimit-tokens-reset", now.Add(toFull).UTC().Format(time.RFC3339))
		return
	}
	h.Set("x-ratelimit-limit-tokens", fmt.Sprint(limit))
	h.Set("x-ratelimit-remaining-tokens", fmt.Sprint(remaining))
	h.Set("x-ratelimit-reset-tokens", toFull.Round(time.Millisecond).String())
}

// stream sends a streamed reply of out tokens in v.chunks chunks.
func (v *quotaVendor) stream(w http.ResponseWriter, anthropicAPI bool, in, out int64) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	emit := func(event string, data any) {
		b, _ := json.Marshal(data)
		if event != "" {
			fmt.Fprintf(w, "event: %s\n", event)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
		f.Flush()
	}
	text := strings.Repeat("tok ", int(out)/v.chunks)
	if anthropicAPI {
		emit("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_q", "type": "message", "role": "assistant", "model": "m", "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": in, "output_tokens": 1}}})
		emit("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for range v.chunks {
			time.Sleep(v.interval)
			emit("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
		}
		emit("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		emit("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": out}})
		emit("message_stop", map[string]any{"type": "message_stop"})
		return
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-q", "object": "chat.completion.chunk", "created": 0, "model": "m", "usage": nil,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}}
	}
	emit("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for range v.chunks {
		time.Sleep(v.interval)
		emit("", chunk(map[string]any{"content": text}, nil))
	}
	emit("", chunk(map[string]any{}, "stop"))
	emit("", map[string]any{"id": "chatcmpl-q", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func writeVendorError(w http.ResponseWriter, anthropicAPI bool, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusTooManyRequests)
	if anthropicAPI {
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": msg}})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "requests", "param": nil, "code": kind}})
}

func vendorJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// vendorRecord is what a quotaVendor saw.
type vendorRecord struct {
	attempts        []vendorAttempt
	refused, beyond int64
	admitted        int64
}

func (v *quotaVendor) record() vendorRecord {
	v.mu.Lock()
	defer v.mu.Unlock()
	return vendorRecord{attempts: append([]vendorAttempt(nil), v.attempts...), refused: v.refused, beyond: v.beyond, admitted: v.admitted}
}

// reset forgets the attempts and counts.
func (v *quotaVendor) reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.attempts, v.refused, v.beyond, v.admitted = nil, 0, 0, 0
}

// minGap returns the shortest time between two attempts of one call.
func (r vendorRecord) minGap() time.Duration {
	last := map[string]time.Time{}
	least := time.Duration(-1)
	for _, a := range r.attempts {
		if t, ok := last[a.call]; ok {
			if d := a.at.Sub(t); least < 0 || d < least {
				least = d
			}
		}
		last[a.call] = a.at
	}
	return least
}

// attemptsWithin counts the attempts sent within d of the first, that
// one included: for a vendor that refuses every call, those sent within d
// of the first refusal.
func (r vendorRecord) attemptsWithin(d time.Duration) int {
	if len(r.attempts) == 0 {
		return 0
	}
	first := r.attempts[0].at
	n := 0
	for _, a := range r.attempts {
		if a.at.Sub(first) < d {
			n++
		}
	}
	return n
}

// calls returns each call's attempts, in the order they came.
func (r vendorRecord) calls() [][]vendorAttempt {
	idx := map[string]int{}
	var out [][]vendorAttempt
	for _, a := range r.attempts {
		i, ok := idx[a.call]
		if !ok {
			i = len(out)
			idx[a.call] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], a)
	}
	return out
}

// medianSpan is the median over calls of the time from a call's first
// attempt to its last.
func (r vendorRecord) medianSpan() time.Duration {
	var spans []time.Duration
	for _, c := range r.calls() {
		spans = append(spans, c[len(c)-1].at.Sub(c[0].at))
	}
	if len(spans) == 0 {
		return 0
	}
	slices.Sort(spans)
	return spans[len(spans)/2]
}

// slowestRetry returns the retry (1 for a call's second attempt) that came
// furthest past bound(retry) after the attempt before it, and by how much
// it came after that attempt; gap is 0 when every retry came within its
// bound.
func (r vendorRecord) slowestRetry(bound func(retry int) time.Duration) (retry int, gap time.Duration) {
	var worst time.Duration
	for _, c := range r.calls() {
		for k := 1; k < len(c); k++ {
			d := c[k].at.Sub(c[k-1].at)
			if over := d - bound(k); over > worst {
				worst, retry, gap = over, k, d
			}
		}
	}
	return retry, gap
}

// firstHeld is the longest time from the first attempt the vendor saw to
// another call's first attempt.
func (r vendorRecord) firstHeld() time.Duration {
	var held time.Duration
	cs := r.calls()
	for _, c := range cs {
		held = max(held, c[0].at.Sub(cs[0][0].at))
	}
	return held
}
