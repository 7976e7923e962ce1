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

	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/internal/headers"
)

// quotaVendor is a loopback LLM vendor that holds its token quota as
// OpenAI's and Anthropic's docs describe it: a per-window limit refilled
// continuously (exactQuota, in exact integers), from which a call reserves
// its prompt plus its max_tokens when it is admitted, and to which the part
// it did not use goes back when its reply ends, the moment the vendor
// knows its usage and before it reports it. It sends its rate headers at
// admission, as those vendors do, and records every attempt, so that a
// test can tell how far apart the attempts of one call were and how many
// tokens were offered beyond what the quota held.
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
	tokens   *exactQuota // nil: no quota
	requests *exactQuota // nil: no quota
	attempts []vendorAttempt
	// beyond sums, over the attempts the vendor decided on, how many
	// tokens each reservation asked for beyond what the token quota held
	// at that instant (rounded up: a fraction of a token counts as one).
	// Every attempt the token quota refuses adds to it, and only those.
	beyond   int64
	refused  int64 // 429s
	admitted int64
}

// vendorAttempt is one request the vendor received.
type vendorAttempt struct {
	call  string // a digest of the body: every attempt of one call has the same
	at    time.Time
	retry string // X-Stainless-Retry-Count
}

// newQuotaVendor starts a vendor with a quota of tokens a window, and of
// as many requests a window as tokens: the token quota is the one that
// binds. A tokens of 0 means no quota.
func newQuotaVendor(t testing.TB, tokens int64, window time.Duration) *quotaVendor {
	v := &quotaVendor{reply: 150, chunks: 10}
	if tokens > 0 {
		now := time.Now()
		v.tokens = newExactQuota(t, tokens, window, now)
		v.requests = newExactQuota(t, tokens, window, now)
	}
	v.srv = httptest.NewServer(http.HandlerFunc(v.serve))
	v.URL = v.srv.URL
	t.Cleanup(v.srv.Close)
	return v
}

// estimate counts a body's tokens as the clients' LLM does, so that a
// reservation is the same on both sides.
func estimate(body []byte) (in, out int64) {
	in, out, _ = llm.Config{}.Estimate(body)
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
	if v.tokens != nil {
		v.tokens.advance(now)
		v.requests.advance(now)
		if short := max(v.tokens.short(need), v.requests.short(1)); short > 0 {
			v.refused++
			v.beyond += v.tokens.tokens(v.tokens.short(need))
			v.setHeaders(w.Header(), anthropicAPI, now)
			wait := max(v.tokens.wait(v.tokens.short(need)), v.requests.wait(v.requests.short(1)))
			v.mu.Unlock()
			w.Header().Set("Retry-After-Ms", fmt.Sprint(int64((wait+time.Millisecond-1)/time.Millisecond)))
			writeVendorError(w, anthropicAPI, "rate_limit_exceeded", "rate limit reached for tokens")
			return
		}
		v.tokens.take(need)
		v.requests.take(1)
	}
	v.admitted++
	v.setHeaders(w.Header(), anthropicAPI, now)
	v.mu.Unlock()

	out := min(v.reply, maxOut)
	// done ends the call's work: what it did not use goes back to the
	// quota, before the reply reports its usage.
	done := func() {
		v.mu.Lock()
		if v.tokens != nil {
			v.tokens.give(need - in - out)
		}
		v.mu.Unlock()
	}
	var req struct {
		Stream bool `json:"stream"`
	}
	json.Unmarshal(body, &req)
	if req.Stream {
		v.stream(w, anthropicAPI, in, out, done)
		return
	}
	done()
	if anthropicAPI {
		vendorJSON(w, map[string]any{
			"id": "msg_q", "type": "message", "role": "assistant", "model": "m",
			"content":     []any{map[string]any{"type": "text", "text": "ok"}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": out},
		})
		return
	}
	vendorJSON(w, map[string]any{
		"id": "chatcmpl-q", "object": "chat.completion", "created": 0, "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": "ok", "refusal": nil}}},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
}

// setHeaders writes the quotas' state in the vendor's dialect: OpenAI's
// exact remaining counts and time to full, Anthropic's token count rounded
// to the nearest thousand and the instant it is full; v.mu held.
func (v *quotaVendor) setHeaders(h http.Header, anthropicAPI bool, now time.Time) {
	if v.tokens == nil {
		return
	}
	tok, req := v.tokens, v.requests
	if anthropicAPI {
		headers.SetDate(h, now)
		headers.SetAnthropic(h, "requests", req.capacity, req.remaining(), req.toFull(), now)
		headers.SetAnthropic(h, "tokens", tok.capacity, (tok.remaining()+500)/1000*1000, tok.toFull(), now)
		return
	}
	headers.SetOpenAI(h, "requests", req.capacity, req.remaining(), req.toFull().Round(time.Millisecond))
	headers.SetOpenAI(h, "tokens", tok.capacity, tok.remaining(), tok.toFull().Round(time.Millisecond))
}

// stream sends a streamed reply of out tokens in v.chunks chunks, v.interval
// apart, calling done when the last is sent, before the events that report
// the usage.
func (v *quotaVendor) stream(w http.ResponseWriter, anthropicAPI bool, in, out int64, done func()) {
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
		done()
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
	done()
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
