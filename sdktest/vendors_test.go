package sdktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-github/v93/github"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/internal/headers"
)

// The goal harness of issue 25: the four vendors' own SDKs, each on the
// setup of docs/vendors.md, against loopback fakes that refuse as each vendor
// documents, every call with a 15 s deadline. Real time: the cases run one
// after another, about 30 s in all. Each row is checked: no failed call
// where the quota allows it, at most 2 attempts a call, the time within
// 1.5x the quota's floor + 2 s, no retry sooner than the vendor asked, and
// a refused account back in under 1 s after 1 attempt with every other call
// back within 0.5 s. The table is logged (go test -v), and written to the
// file THROTTLE_VENDOR_TABLE names.

const callDeadline = 15 * time.Second

// row is one case's outcome.
type row struct {
	name        string
	calls       int
	failed      int
	wantFailed  int // calls the quota cannot allow (a spent account)
	maxAttempts int
	took, floor time.Duration
	// asked is the least wait the vendor named before a retry, and
	// soonest the shortest gap between a refusal and the retry of its call.
	asked, soonest time.Duration
	note           string
}

func (r row) checks() []string {
	var bad []string
	if r.failed != r.wantFailed {
		bad = append(bad, fmt.Sprintf("%d failed calls, want %d", r.failed, r.wantFailed))
	}
	if r.maxAttempts > 2 {
		bad = append(bad, fmt.Sprintf("%d attempts for a call, want at most 2", r.maxAttempts))
	}
	if limit := r.floor*3/2 + 2*time.Second; r.took > limit {
		bad = append(bad, fmt.Sprintf("took %v, want at most %v (1.5x the floor %v + 2 s)", r.took, limit, r.floor))
	}
	if r.asked > 0 && r.soonest >= 0 && r.soonest < r.asked-50*time.Millisecond {
		bad = append(bad, fmt.Sprintf("a retry %v after its refusal, before the %v asked", r.soonest, r.asked))
	}
	return bad
}

// tally records the attempts of each call at a fake, by call id.
type tally struct {
	mu       sync.Mutex
	attempts map[string][]time.Time
	refused  map[string][]time.Time
}

func newTally() *tally {
	return &tally{attempts: map[string][]time.Time{}, refused: map[string][]time.Time{}}
}

func (t *tally) attempt(call string) {
	t.mu.Lock()
	t.attempts[call] = append(t.attempts[call], time.Now())
	t.mu.Unlock()
}

func (t *tally) refuse(call string) {
	t.mu.Lock()
	t.refused[call] = append(t.refused[call], time.Now())
	t.mu.Unlock()
}

// fill sets the attempts and the soonest retry of r.
func (t *tally) fill(r *row) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r.soonest = -1
	for call, at := range t.attempts {
		r.maxAttempts = max(r.maxAttempts, len(at))
		ref := t.refused[call]
		for i, a := range at[1:] {
			if i < len(ref) {
				if gap := a.Sub(ref[i]); r.soonest < 0 || gap < r.soonest {
					r.soonest = gap
				}
			}
		}
	}
}

// serverBucket is a vendor's quota: a continuous bucket, or with window set
// one that is whole again at the end of each window.
type serverBucket struct {
	mu     sync.Mutex
	cap    float64
	level  float64
	rate   float64 // per second, for a continuous bucket
	window time.Duration
	end    time.Time // of the current window
	last   time.Time
}

func (b *serverBucket) refill(now time.Time) {
	if b.window > 0 {
		for !now.Before(b.end) {
			b.level, b.end = b.cap, b.end.Add(b.window)
		}
		return
	}
	b.level = math.Min(b.cap, b.level+b.rate*now.Sub(b.last).Seconds())
	b.last = now
}

// take takes n if the bucket holds them; it reports what is left and how
// long until the bucket is full (continuous) or the window ends.
func (b *serverBucket) take(n float64) (ok bool, left float64, reset time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.refill(now)
	if b.level >= n {
		b.level -= n
		ok = true
	}
	if b.window > 0 {
		return ok, b.level, b.end.Sub(now)
	}
	return ok, b.level, time.Duration((b.cap - b.level) / b.rate * float64(time.Second))
}

func newContinuous(capacity, level, perSecond float64) *serverBucket {
	return &serverBucket{cap: capacity, level: level, rate: perSecond, last: time.Now()}
}

func newWindow(capacity, level float64, resetIn, window time.Duration) *serverBucket {
	return &serverBucket{cap: capacity, level: level, window: window, end: time.Now().Add(resetIn)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// fakeServer starts a loopback fake.
func fakeServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// run makes n calls at once, each with its own deadline, and returns how
// long they all took and how many failed.
func run(n int, call func(ctx context.Context, id string) error, errs chan<- error) (time.Duration, int) {
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
			defer cancel()
			if err := call(ctx, "c"+strconv.Itoa(i)); err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
				if errs != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), failed
}

// --- OpenAI -----------------------------------------------------------

// openAIFake answers chat completions under a requests-per-minute quota as
// OpenAI does: x-ratelimit-* on every response, the reset being the time
// until the quota is full again, and a 429 rate_limit_exceeded without
// Retry-After when it is spent.
func openAIFake(t *testing.T, rpm *serverBucket, limit int64, tl *tally, stream bool) *httptest.Server {
	return fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		call := r.Header.Get("X-Call")
		tl.attempt(call)
		ok, left, reset := rpm.take(1)
		headers.SetOpenAI(w.Header(), "requests", limit, int64(left), reset)
		headers.SetOpenAI(w.Header(), "tokens", 150000, 149000, 400*time.Millisecond)
		if !ok {
			tl.refuse(call)
			writeJSON(w, 429, map[string]any{"error": map[string]any{"message": "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 600, Used 600, Requested 1.", "type": "requests", "param": nil, "code": "rate_limit_exceeded"}})
			return
		}
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, chunk := range []string{
				`{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`,
				`{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
				`{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`,
			} {
				fmt.Fprintf(w, "data: %s\n\n", chunk)
			}
			io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		writeJSON(w, 200, map[string]any{"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "ok"}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}})
	})
}

func openAIClient(url string, hc *http.Client) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sk-test"), option.WithHTTPClient(hc))
}

func openAICall(c openai.Client) func(ctx context.Context, id string) error {
	return func(ctx context.Context, id string) error {
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: openai.ChatModelGPT4oMini, MaxTokens: openai.Int(50),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say ok.")},
		}, option.WithHeader("X-Call", id))
		return err
	}
}

// openAILimiter is docs/vendors.md's limiter for OpenAI at 600 requests and
// 150,000 tokens a minute.
func openAILimiter(t *testing.T) *throttle.Limiter { return llmLimiter(t, 600, 150000, time.Minute) }

func caseOpenAIBurst(t *testing.T) row {
	tl := newTally()
	srv := openAIFake(t, newContinuous(600, 20, 10), 600, tl, false)
	hc, _ := llmClient(t, openAILimiter(t))
	took, failed := run(60, openAICall(openAIClient(srv.URL, hc)), nil)
	r := row{name: "OpenAI: 60 calls at once, 600 RPM with 20 left (openai-go)", calls: 60, failed: failed, took: took, floor: 4 * time.Second}
	tl.fill(&r)
	return r
}

func caseOpenAIStreams(t *testing.T) row {
	tl := newTally()
	srv := openAIFake(t, newContinuous(600, 20, 10), 600, tl, true)
	hc, _ := llmClient(t, openAILimiter(t))
	c := openAIClient(srv.URL, hc)
	took, failed := run(40, func(ctx context.Context, id string) error {
		s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model: openai.ChatModelGPT4oMini, MaxTokens: openai.Int(50),
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say ok.")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		}, option.WithHeader("X-Call", id))
		defer s.Close()
		var usage int64
		for s.Next() {
			usage += s.Current().Usage.TotalTokens
		}
		if err := s.Err(); err != nil {
			return err
		}
		if usage != 10 {
			return fmt.Errorf("usage %d, want 10", usage)
		}
		return nil
	}, nil)
	r := row{name: "OpenAI: 40 streams with include_usage, 20 left (openai-go)", calls: 40, failed: failed, took: took, floor: 2 * time.Second}
	tl.fill(&r)
	return r
}

// caseOpenAIBilling: one call on a spent account (insufficient_quota)
// among nine good ones, on a Transport without an llm.Config.
func caseOpenAIBilling(t *testing.T) (row, []string) {
	tl := newTally()
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		call := r.Header.Get("X-Call")
		tl.attempt(call)
		if call == "c0" {
			tl.refuse(call)
			writeJSON(w, 429, map[string]any{"error": map[string]any{"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": nil, "code": "insufficient_quota"}})
			return
		}
		writeJSON(w, 200, map[string]any{"id": "c", "object": "chat.completion", "model": "gpt-4o-mini", "choices": []any{}, "usage": map[string]any{"prompt_tokens": 9, "completion_tokens": 1}})
	})
	l := newLimiter(t, nil, 600, throttle.Per(600, time.Minute))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
	return billingRow(t, "OpenAI: insufficient_quota beside 9 calls, no llm.Config (openai-go)", tl, tr, openAICall(openAIClient(srv.URL, &http.Client{Transport: tr})))
}

// billingRow runs one call on the spent account and nine others, and
// checks the billing rules: the refusal back in < 1 s after 1 attempt,
// reported in Stats, the others each within 0.5 s.
func billingRow(t *testing.T, name string, tl *tally, tr *httpthrottle.Transport, call func(context.Context, string) error) (row, []string) {
	var mu sync.Mutex
	var slowest, billed time.Duration
	var billErr error
	took, failed := run(10, func(ctx context.Context, id string) error {
		start := time.Now()
		err := call(ctx, id)
		d := time.Since(start)
		mu.Lock()
		if id == "c0" {
			billed, billErr = d, err
		} else {
			slowest = max(slowest, d)
		}
		mu.Unlock()
		return err
	}, nil)
	r := row{name: name, calls: 10, failed: failed, wantFailed: 1, took: took, floor: 0,
		note: fmt.Sprintf("refusal back in %v; others within %v", billed.Round(time.Millisecond), slowest.Round(time.Millisecond))}
	tl.fill(&r)
	var bad []string
	if billErr == nil || billed >= time.Second {
		bad = append(bad, fmt.Sprintf("the refused account: %v after %v, want its error in < 1 s", billErr, billed))
	}
	if n := len(tl.attempts["c0"]); n != 1 {
		bad = append(bad, fmt.Sprintf("the refused account made %d attempts, want 1", n))
	}
	if slowest > 500*time.Millisecond {
		bad = append(bad, fmt.Sprintf("a good call took %v, want within 0.5 s", slowest))
	}
	if st := tr.Stats(); st.Refused != 1 || st.Throttled != 0 {
		bad = append(bad, fmt.Sprintf("stats %+v, want 1 refused, 0 throttled", st))
	}
	return r, bad
}

// caseOpenAISettle: ten calls at once on a token quota that holds five
// estimates; each uses a quarter of its estimate. Settled, they fit.
func caseOpenAISettle(t *testing.T) row {
	tl := newTally()
	tokens := newContinuous(1000, 1000, 1000.0/60)
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		call := r.Header.Get("X-Call")
		tl.attempt(call)
		ok, left, reset := tokens.take(50)
		headers.SetOpenAI(w.Header(), "tokens", 1000, int64(left), reset)
		if !ok {
			tl.refuse(call)
			writeJSON(w, 429, map[string]any{"error": map[string]any{"message": "Rate limit reached on tokens per min (TPM)", "type": "tokens", "code": "rate_limit_exceeded"}})
			return
		}
		time.Sleep(100 * time.Millisecond) // the model's time
		writeJSON(w, 200, map[string]any{"id": "c", "object": "chat.completion", "model": "gpt-4o-mini", "choices": []any{}, "usage": map[string]any{"prompt_tokens": 20, "completion_tokens": 30}})
	})
	b, err := throttle.New(1000, throttle.Per(1000, time.Minute), throttle.WithName("tokens"))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := throttle.NewLimiter(b)
	hc, _ := llmClient(t, l)
	c := openAIClient(srv.URL, hc)
	took, failed := run(10, func(ctx context.Context, id string) error {
		// About 200 tokens reserved: the prompt and max_tokens 180.
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: openai.ChatModelGPT4oMini, MaxTokens: openai.Int(180),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Write a haiku about rate limits.")},
		}, option.WithHeader("X-Call", id))
		return err
	}, nil)
	r := row{name: "OpenAI: 10 estimates of 200 on 1,000 tokens, settling at 50 (openai-go)", calls: 10, failed: failed, took: took, floor: 200 * time.Millisecond}
	tl.fill(&r)
	return r
}

// --- Anthropic --------------------------------------------------------

func anthropicClient(url string, hc *http.Client) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(url+"/"), aoption.WithAPIKey("sk-ant"), aoption.WithHTTPClient(hc))
}

func anthropicCall(c anthropic.Client) func(ctx context.Context, id string) error {
	return func(ctx context.Context, id string) error {
		_, err := c.Messages.New(ctx, anthropic.MessageNewParams{
			Model: anthropic.ModelClaudeHaiku5_5, MaxTokens: 50,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say ok."))},
		}, aoption.WithHeader("X-Call", id))
		return err
	}
}

var anthropicMessage = map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-5-5",
	"content": []any{map[string]any{"type": "text", "text": "ok"}}, "stop_reason": "end_turn",
	"usage": map[string]any{"input_tokens": 9, "output_tokens": 1}}

// caseAnthropicSpendCap: Anthropic's spend-cap 429 (rate_limit_error with
// error.details.error_code enforced_spend_limit_reached, no retry-after)
// on one call among nine good ones, with an llm.Config.
func caseAnthropicSpendCap(t *testing.T) (row, []string) {
	tl := newTally()
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		call := r.Header.Get("X-Call")
		tl.attempt(call)
		if call == "c0" {
			tl.refuse(call)
			writeJSON(w, 429, map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error",
				"message": "Your organization has reached its monthly usage limit for its tier.", "details": map[string]any{"error_code": "enforced_spend_limit_reached"}},
				"request_id": "req_1"})
			return
		}
		writeJSON(w, 200, anthropicMessage)
	})
	hc, tr := llmClient(t, llmLimiter(t, 50, 40000, time.Minute))
	return billingRow(t, "Anthropic: spend-cap 429 beside 9 calls (anthropic-sdk-go)", tl, tr, anthropicCall(anthropicClient(srv.URL, hc)))
}

// caseAnthropicRefusedAnyway: a bare 429 on every call (no header, no
// body signal): a call refused anyway costs through the transport at most
// 1.5x the SDK alone.
func caseAnthropicRefusedAnyway(t *testing.T) (row, []string) {
	tl := newTally()
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		tl.attempt(r.Header.Get("X-Call"))
		writeJSON(w, 429, map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": "Number of requests has exceeded your rate limit"}})
	})
	alone := anthropicCall(anthropicClient(srv.URL, &http.Client{Transport: newBase(t)}))
	hc, _ := llmClient(t, llmLimiter(t, 50, 40000, time.Minute))
	through := anthropicCall(anthropicClient(srv.URL, hc))
	// Alternated, 3 rounds each; medians.
	var a, b []time.Duration
	for i := range 6 {
		f := alone
		if i%2 == 1 {
			f = through
		}
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		start := time.Now()
		f(ctx, "r"+strconv.Itoa(i))
		cancel()
		if i%2 == 0 {
			a = append(a, time.Since(start))
		} else {
			b = append(b, time.Since(start))
		}
	}
	ma, mb := median(a), median(b)
	r := row{name: "Anthropic: bare 429 on every call, SDK alone vs through (anthropic-sdk-go)", calls: 6, failed: 0, took: mb, floor: ma,
		note: fmt.Sprintf("alone %v, through %v (median of 3 each): %.2fx", ma.Round(time.Millisecond), mb.Round(time.Millisecond), float64(mb)/float64(ma))}
	var bad []string
	if float64(mb) > 1.5*float64(ma) {
		bad = append(bad, fmt.Sprintf("through the transport %v against %v alone: more than 1.5x", mb, ma))
	}
	// The SDK's own 3 attempts, no more.
	tl.mu.Lock()
	for call, at := range tl.attempts {
		if len(at) > 3 {
			bad = append(bad, fmt.Sprintf("call %s made %d attempts, want the SDK's 3", call, len(at)))
		}
	}
	tl.mu.Unlock()
	return r, bad
}

// caseAnthropicRounded: ten calls one after another, each writing 100
// output tokens, against an output-tokens quota of 8,000 a minute of which
// 950 remain; the fake reports what remains rounded to the nearest
// thousand, as Anthropic does, so from the fifth call on it says 0 while
// 450 remain. Taken as exact, each call after it would wait 0.75 s for a
// refill the server does not need.
func caseAnthropicRounded(t *testing.T) row {
	tl := newTally()
	out := newContinuous(8000, 950, 8000.0/60)
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		call := r.Header.Get("X-Call")
		tl.attempt(call)
		ok, left, reset := out.take(100)
		now := time.Now()
		headers.SetAnthropic(w.Header(), "requests", 4000, 3999, 15*time.Millisecond, now)
		headers.SetAnthropic(w.Header(), "output-tokens", 8000, int64(math.Round(left/1000))*1000, reset, now)
		if !ok {
			tl.refuse(call)
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil((100-left)/(8000.0/60)))))
			writeJSON(w, 429, map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": "This request would exceed your organization's rate limit of 8,000 output tokens per minute."}})
			return
		}
		msg := map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-5-5",
			"content": []any{map[string]any{"type": "text", "text": "ok"}}, "stop_reason": "max_tokens",
			"usage": map[string]any{"input_tokens": 9, "output_tokens": 100}}
		writeJSON(w, 200, msg)
	})
	req, err := throttle.New(4000, throttle.Per(4000, time.Minute), throttle.WithName("requests"))
	if err != nil {
		t.Fatal(err)
	}
	otpm, err := throttle.New(8000, throttle.Per(8000, time.Minute), throttle.WithName("output-tokens"))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := throttle.NewLimiter(req, otpm)
	hc, _ := llmClient(t, l)
	c := anthropicClient(srv.URL, hc)
	start := time.Now()
	failed := 0
	for i := range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		_, err := c.Messages.New(ctx, anthropic.MessageNewParams{
			Model: anthropic.ModelClaudeHaiku5_5, MaxTokens: 100,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Write a story."))},
		}, aoption.WithHeader("X-Call", "c"+strconv.Itoa(i)))
		cancel()
		if err != nil {
			failed++
		}
	}
	// The quota's floor: 1,000 tokens written, 950 there, 133 a second.
	floor := time.Duration((1000.0 - 950) / (8000.0 / 60) * float64(time.Second))
	r := row{name: "Anthropic: 10 calls of 100 output tokens, 950 of 8,000/min left, counts rounded to the thousand (anthropic-sdk-go)",
		calls: 10, failed: failed, took: time.Since(start), floor: floor}
	tl.fill(&r)
	return r
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// --- Gemini -----------------------------------------------------------

func geminiClient(t *testing.T, url string, hc *http.Client) *genai.Client {
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI, HTTPClient: hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: url + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func geminiCall(c *genai.Client) func(ctx context.Context, id string) error {
	return func(ctx context.Context, id string) error {
		_, err := c.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("Say ok."),
			&genai.GenerateContentConfig{HTTPOptions: &genai.HTTPOptions{Headers: http.Header{"X-Call": {id}}}})
		return err
	}
}

// caseGemini: a per-minute window with 2 calls left, restored in 3 s; a
// 429 RESOURCE_EXHAUSTED says so in its body only (RetryInfo retryDelay).
func caseGemini(t *testing.T) row {
	tl := newTally()
	q := newWindow(10, 2, 3*time.Second, time.Minute)
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		call := r.Header.Get("X-Call")
		tl.attempt(call)
		ok, _, reset := q.take(1)
		if !ok {
			tl.refuse(call)
			writeJSON(w, 429, map[string]any{"error": map[string]any{"code": 429, "message": "You exceeded your current quota.", "status": "RESOURCE_EXHAUSTED",
				"details": []any{
					map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}}},
					map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": strconv.Itoa(int(math.Ceil(reset.Seconds()))) + "s"},
				}}})
			return
		}
		writeJSON(w, 200, map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": "ok"}}}, "finishReason": "STOP"}},
			"usageMetadata": map[string]any{"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4}})
	})
	hc, _ := llmClient(t, llmLimiter(t, 60, 250000, time.Minute))
	took, failed := run(4, geminiCall(geminiClient(t, srv.URL, hc)), nil)
	r := row{name: "Gemini: 4 calls, 2 left, RetryInfo 3s in the body (genai)", calls: 4, failed: failed, took: took, floor: 3 * time.Second, asked: 3 * time.Second}
	tl.fill(&r)
	return r
}

// --- GitHub -----------------------------------------------------------

func githubClient(t *testing.T, srvURL string, hc *http.Client) *github.Client {
	// go-github refuses calls itself after it has seen remaining 0, until
	// the reset; the transport waits for the reset instead.
	c, err := github.NewClient(github.WithHTTPClient(hc), github.WithDisableRateLimitCheck(), github.WithEnterpriseURLs(srvURL+"/", srvURL+"/"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func githubCall(c *github.Client) func(ctx context.Context, id string) error {
	return func(ctx context.Context, id string) error {
		_, _, err := c.Repositories.Get(ctx, "o", id)
		return err
	}
}

// githubLimiter is docs/vendors.md's limiter for GitHub's 5,000 an hour.
func githubLimiter(t *testing.T) *throttle.Limiter {
	return newLimiter(t, nil, 5000, throttle.Per(5000, time.Hour))
}

func githubCounters(h http.Header, limit, remaining int64, reset time.Time) {
	h.Set("X-Ratelimit-Limit", strconv.FormatInt(limit, 10))
	h.Set("X-Ratelimit-Remaining", strconv.FormatInt(remaining, 10))
	h.Set("X-Ratelimit-Used", strconv.FormatInt(limit-remaining, 10))
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-Ratelimit-Resource", "core")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
}

// githubFake answers GET /repos/o/{id}: the primary quota q (a window of
// an hour), and, when secondary is set, a secondary limit that admits the
// first burst calls and then refuses with 403 and retry-after for 2 s.
func githubFake(t *testing.T, q *serverBucket, tl *tally, burst int, noRetryAfter bool) *httptest.Server {
	var mu sync.Mutex
	admitted := 0
	var blockedUntil time.Time
	return fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, call, _ := strings.Cut(r.URL.Path, "/repos/o/")
		tl.attempt(call)
		if burst > 0 {
			mu.Lock()
			now := time.Now()
			admitted++
			if admitted > burst && blockedUntil.IsZero() {
				blockedUntil = now.Add(2 * time.Second)
			}
			blocked := now.Before(blockedUntil)
			mu.Unlock()
			if blocked {
				tl.refuse(call)
				githubCounters(w.Header(), 5000, 4990, now.Add(time.Hour))
				if !noRetryAfter {
					w.Header().Set("Retry-After", "2")
				}
				writeJSON(w, 403, map[string]any{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
					"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits", "status": "403"})
				return
			}
		}
		ok, left, reset := q.take(1)
		githubCounters(w.Header(), 5000, int64(left), time.Now().Add(reset))
		if !ok {
			tl.refuse(call)
			writeJSON(w, 403, map[string]any{"message": "API rate limit exceeded for user ID 1.",
				"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits", "status": "403"})
			return
		}
		writeJSON(w, 200, map[string]any{"id": 1, "name": call, "full_name": "o/" + call})
	})
}

func caseGitHubSecondary(t *testing.T) row {
	tl := newTally()
	srv := githubFake(t, newWindow(5000, 5000, time.Hour, time.Hour), tl, 12, false)
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(githubLimiter(t))))
	took, failed := run(24, githubCall(githubClient(t, srv.URL, &http.Client{Transport: tr})), nil)
	r := row{name: "GitHub: secondary 403 with retry-after 2 while 4,990 remain, 24 calls (go-github)", calls: 24, failed: failed, took: took, floor: 2 * time.Second, asked: 2 * time.Second}
	tl.fill(&r)
	return r
}

// untilSecond is how long until the next whole second after d from now:
// GitHub's reset is in epoch seconds.
func untilSecond(d time.Duration) time.Duration {
	now := time.Now()
	return time.Unix(now.Add(d).Unix()+1, 0).Sub(now)
}

func caseGitHubPrimary(t *testing.T) row {
	tl := newTally()
	resetIn := untilSecond(3 * time.Second)
	srv := githubFake(t, newWindow(5000, 10, resetIn, time.Hour), tl, 0, false)
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(githubLimiter(t))))
	took, failed := run(30, githubCall(githubClient(t, srv.URL, &http.Client{Transport: tr})), nil)
	r := row{name: "GitHub: primary 403, 10 left, the window resets in 3-4 s, 30 calls (go-github)", calls: 30, failed: failed, took: took, floor: resetIn}
	tl.fill(&r)
	r.asked = resetIn - time.Second // the reset is whole seconds: at least its second
	return r
}

// caseGitHubReset: one call meets remaining 0 (reset in about 3 s), then 8
// more; after the reset the server has its whole window again.
func caseGitHubReset(t *testing.T) row {
	tl := newTally()
	resetIn := untilSecond(2 * time.Second)
	srv := githubFake(t, newWindow(5000, 0, resetIn, time.Hour), tl, 0, false)
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(githubLimiter(t))))
	call := githubCall(githubClient(t, srv.URL, &http.Client{Transport: tr}))
	start := time.Now()
	var wg sync.WaitGroup
	var failed int
	var mu sync.Mutex
	one := func(id string) {
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		defer cancel()
		if call(ctx, id) != nil {
			mu.Lock()
			failed++
			mu.Unlock()
		}
	}
	wg.Go(func() { one("first") })
	for !func() bool { tl.mu.Lock(); defer tl.mu.Unlock(); return len(tl.refused) > 0 }() {
		time.Sleep(time.Millisecond)
	}
	for i := range 8 {
		wg.Go(func() { one("c" + strconv.Itoa(i)) })
	}
	wg.Wait()
	r := row{name: "GitHub: remaining 0, then 9 calls at 5,000/h; the window resets at 2-3 s (go-github)", calls: 9, failed: failed, took: time.Since(start), floor: resetIn}
	tl.fill(&r)
	r.asked = resetIn - time.Second
	return r
}

// --- the transport's own refusal, through each SDK ---------------------

// caseRefusalThroughSDKs: a limiter whose next permit is a minute away
// refuses a call with a 1 s deadline; through each SDK the caller gets an
// error matching *throttle.WaitError and context.DeadlineExceeded, after
// no attempt at all and at once.
func caseRefusalThroughSDKs(t *testing.T) (row, []string) {
	tl := newTally()
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) { tl.attempt(r.URL.Path) })
	var bad []string
	start := time.Now()
	for name, mk := range map[string]func(hc *http.Client) func(context.Context, string) error{
		"openai-go": func(hc *http.Client) func(context.Context, string) error {
			return openAICall(openAIClient(srv.URL, hc))
		},
		"anthropic-sdk-go": func(hc *http.Client) func(context.Context, string) error {
			return anthropicCall(anthropicClient(srv.URL, hc))
		},
		"genai": func(hc *http.Client) func(context.Context, string) error {
			return geminiCall(geminiClient(t, srv.URL, hc))
		},
		"go-github": func(hc *http.Client) func(context.Context, string) error {
			return githubCall(githubClient(t, srv.URL, hc))
		},
	} {
		l := newLimiter(t, nil, 1, throttle.Per(1, time.Minute))
		l.TryAcquire(1) // spent: the next permit is a minute away
		opts := []httpthrottle.Option{}
		if name != "go-github" {
			opts = append(opts, httpthrottle.WithAccounting(llm.Config{}))
		}
		if name != "go-github" {
			// The LLM limiters count requests and tokens; the spent
			// bucket is the requests.
			r, _ := throttle.New(1, throttle.Per(1, time.Minute), throttle.WithName("requests"))
			tok, _ := throttle.New(100000, throttle.Per(100000, time.Minute), throttle.WithName("tokens"))
			r.TryAcquire(1)
			l, _ = throttle.NewLimiter(r, tok)
		}
		hc := &http.Client{Transport: must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), opts...))}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		t0 := time.Now()
		err := mk(hc)(ctx, "x")
		d := time.Since(t0)
		cancel()
		var we *throttle.WaitError
		if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
			bad = append(bad, fmt.Sprintf("%s: error %v (%T), want one matching *throttle.WaitError and context.DeadlineExceeded", name, err, err))
		}
		if d > 200*time.Millisecond {
			bad = append(bad, fmt.Sprintf("%s: the refusal took %v, want it at once", name, d))
		}
	}
	tl.mu.Lock()
	sent := len(tl.attempts)
	tl.mu.Unlock()
	if sent != 0 {
		bad = append(bad, fmt.Sprintf("%d requests reached the server, want none", sent))
	}
	r := row{name: "The limiter's refusal through openai-go, anthropic-sdk-go, genai, go-github", calls: 4, took: time.Since(start), floor: 0,
		note: "errors.As *throttle.WaitError and errors.Is context.DeadlineExceeded through all four; no request sent, no SDK retry"}
	if len(bad) > 0 {
		r.failed = len(bad)
	}
	return r, bad
}

// --- hostile servers ---------------------------------------------------

// caseStalledBody: a 429 whose body never comes: RoundTrip returns it.
func caseStalledBody(t *testing.T) (row, []string) {
	release := make(chan struct{})
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	l := newLimiter(t, nil, 10, throttle.Per(10, time.Second))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	took := time.Since(start)
	var bad []string
	if err != nil || resp.StatusCode != 429 {
		bad = append(bad, fmt.Sprintf("status %v, error %v; want the 429", resp, err))
	} else {
		resp.Body.Close()
	}
	if took > time.Second {
		bad = append(bad, fmt.Sprintf("RoundTrip took %v on a stalled body", took))
	}
	return row{name: "A 429 whose body stalls: RoundTrip returns the response", calls: 1, took: took, floor: 0, maxAttempts: 1,
		note: fmt.Sprintf("returned in %v", took.Round(time.Millisecond))}, bad
}

// caseManyPolicies: a GET whose response carries n RateLimit-Policy items,
// through the transport against the same GET without it (alternated,
// medians of 5).
func caseManyPolicies(t *testing.T, n int) (row, []string) {
	h := http.Header{}
	for i := range n {
		headers.AddIETF(h, "p"+strconv.Itoa(i), 100, time.Minute, 50, 30*time.Second)
	}
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		for k, v := range h {
			w.Header()[k] = v
		}
		w.WriteHeader(200)
	})
	plain := &http.Client{Transport: newBase(t)}
	l := newLimiter(t, nil, 1000, throttle.Per(1000, time.Second))
	through := &http.Client{Transport: must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))}
	var a, b []time.Duration
	for i := range 10 {
		c := plain
		if i%2 == 1 {
			c = through
		}
		start := time.Now()
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if i%2 == 0 {
			a = append(a, time.Since(start))
		} else {
			b = append(b, time.Since(start))
		}
	}
	ma, mb := median(a), median(b)
	var bad []string
	if float64(mb) > 2*float64(ma) {
		bad = append(bad, fmt.Sprintf("%d policies: %v through the transport against %v without, more than 2x", n, mb, ma))
	}
	return row{name: fmt.Sprintf("A GET with %d RateLimit-Policy items, through vs without the transport", n), calls: 10, took: mb, floor: ma,
		note: fmt.Sprintf("without %v, through %v (median of 5 each): %.2fx", ma.Round(time.Microsecond), mb.Round(time.Microsecond), float64(mb)/float64(ma))}, bad
}

// TestVendors runs every case and checks every row.
func TestVendors(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: about 30 s")
	}
	var rows []row
	add := func(r row, extra ...string) {
		bad := append(r.checks(), extra...)
		for _, b := range bad {
			t.Errorf("%s: %s", r.name, b)
		}
		if len(bad) == 0 {
			r.note = strings.TrimSpace("all checks hold. " + r.note)
		}
		rows = append(rows, r)
	}
	add(caseOpenAIBurst(t))
	add(caseOpenAIStreams(t))
	add(caseOpenAISettle(t))
	r, bad := caseOpenAIBilling(t)
	add(r, bad...)
	r, bad = caseAnthropicSpendCap(t)
	add(r, bad...)
	r, bad = caseAnthropicRefusedAnyway(t)
	add(r, bad...)
	add(caseAnthropicRounded(t))
	add(caseGemini(t))
	add(caseGitHubSecondary(t))
	add(caseGitHubPrimary(t))
	add(caseGitHubReset(t))
	r, bad = caseRefusalThroughSDKs(t)
	add(r, bad...)
	r, bad = caseStalledBody(t)
	add(r, bad...)
	for _, n := range []int{10_000, 100_000} {
		r, bad = caseManyPolicies(t, n)
		add(r, bad...)
	}
	var sb strings.Builder
	sb.WriteString("| case | calls | failed | most attempts | took | floor | soonest retry / asked | note |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		retry := "-"
		if r.asked > 0 {
			retry = fmt.Sprintf("%v / %v", r.soonest.Round(10*time.Millisecond), r.asked.Round(10*time.Millisecond))
		}
		fmt.Fprintf(&sb, "| %s | %d | %d | %d | %v | %v | %s | %s |\n", r.name, r.calls, r.failed, r.maxAttempts,
			r.took.Round(time.Millisecond), r.floor.Round(time.Millisecond), retry, r.note)
	}
	t.Log("\n" + sb.String())
	if f := os.Getenv("THROTTLE_VENDOR_TABLE"); f != "" {
		os.WriteFile(f, []byte(sb.String()), 0o644)
	}
}
