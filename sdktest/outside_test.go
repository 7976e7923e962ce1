package sdktest_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/internal/headers"
)

// The rows of issue 42: the same harness as TestVendors (the vendors' SDKs
// at their defaults, fakes that follow their docs, 15 s deadlines, the same
// checks), on the cases a new user met from outside: bursts on a rate Auto
// has not learned yet, reservations not yet settled, GitHub's and Gemini's
// signals under Auto and Anthropic's output tokens. The table is logged,
// and written to the file THROTTLE_OUTSIDE_TABLE names.

// autoClient is a Transport over auto.New(), with an llm.Config when tokens.
func autoClient(t *testing.T, tokens bool) *http.Client {
	var opts []httpthrottle.Option
	if tokens {
		opts = append(opts, httpthrottle.WithAccounting(llm.Config{}))
	}
	learned := must(auto.New())
	return &http.Client{Transport: must(httpthrottle.NewTransport(newBase(t), learned, opts...))}
}

func caseAutoOpenAIBurst(t *testing.T) row {
	tl := newTally()
	srv := openAIFake(t, newContinuous(600, 20, 10), 600, tl, false)
	took, failed := run(60, openAICall(openAIClient(srv.URL, autoClient(t, false))), nil)
	r := row{name: "OpenAI: 60 calls at once, 600 RPM with 20 left, Auto (openai-go)", calls: 60, failed: failed, took: took, floor: 4 * time.Second}
	tl.fill(&r)
	return r
}

// anthropicFake answers messages under a requests-per-minute quota as
// Anthropic does: anthropic-ratelimit-requests-* on every response, and a
// 429 rate_limit_error with retry-after in whole seconds.
func anthropicFake(t *testing.T, rpm *serverBucket, limit int64, tl *tally) string {
	return fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		call := r.Header.Get("X-Call")
		tl.attempt(call)
		ok, left, reset := rpm.take(1)
		now := time.Now()
		headers.SetDate(w.Header(), now)
		headers.SetAnthropic(w.Header(), "requests", limit, int64(left), reset, now)
		if !ok {
			tl.refuse(call)
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil((1-left)/rpm.rate))))
			writeJSON(w, 429, map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}})
			return
		}
		writeJSON(w, 200, anthropicMessage)
	}).URL
}

func caseAutoAnthropicBurst(t *testing.T) row {
	tl := newTally()
	url := anthropicFake(t, newContinuous(600, 20, 10), 600, tl)
	took, failed := run(60, anthropicCall(anthropicClient(url, autoClient(t, false))), nil)
	r := row{name: "Anthropic: 60 calls at once, 600 RPM with 20 left, Auto (anthropic-sdk-go)", calls: 60, failed: failed, took: took, floor: 4 * time.Second}
	tl.fill(&r)
	return r
}

// openAITokenStreams answers streamed chat completions under 6,000 tokens
// a minute, charging each call what it uses (95 tokens) and reporting it
// in the stream's last chunk after the model's few tens of milliseconds.
func openAITokenStreams(t *testing.T, tl *tally) string {
	tpm := newContinuous(6000, 6000, 100)
	return fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		call := r.Header.Get("X-Call")
		tl.attempt(call)
		ok, left, reset := tpm.take(95)
		headers.SetOpenAI(w.Header(), "requests", 600, 599, 100*time.Millisecond)
		headers.SetOpenAI(w.Header(), "tokens", 6000, int64(left), reset)
		if !ok {
			tl.refuse(call)
			writeJSON(w, 429, map[string]any{"error": map[string]any{"message": "Rate limit reached for gpt-4o-mini on tokens per min (TPM): Limit 6000.", "type": "tokens", "param": nil, "code": "rate_limit_exceeded"}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fmt.Fprintf(w, "data: %s\n\n", `{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`)
		fl.Flush()
		time.Sleep(30 * time.Millisecond) // the model's time
		for _, chunk := range []string{
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":15,"completion_tokens":80,"total_tokens":95}}`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", chunk)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}).URL
}

func caseOpenAITokenStreams(t *testing.T, auto bool) row {
	tl := newTally()
	url := openAITokenStreams(t, tl)
	hc := autoClient(t, true)
	name := "OpenAI: 40 streams at once, max_tokens 400 using 95, 6,000 TPM, Auto+llm.Config (openai-go)"
	if !auto {
		hc, _ = llmClient(t, llmLimiter(t, 600, 6000, time.Minute))
		name = "OpenAI: 40 streams at once, max_tokens 400 using 95, 6,000 TPM, llm.Config (openai-go)"
	}
	c := openAIClient(url, hc)
	took, failed := run(40, func(ctx context.Context, id string) error {
		s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model: openai.ChatModelGPT4oMini, MaxTokens: openai.Int(400),
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Summarise the rate-limit headers of a vendor's API in two sentences.")},
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
		if usage != 95 {
			return fmt.Errorf("usage %d, want 95", usage)
		}
		return nil
	}, nil)
	// The server holds all 40 uses at once: the floor is the streams' own.
	r := row{name: name, calls: 40, failed: failed, took: took, floor: 0}
	tl.fill(&r)
	return r
}

func caseAutoGitHubPrimary(t *testing.T) row {
	tl := newTally()
	resetIn := untilSecond(3 * time.Second)
	srv := githubFake(t, newWindow(5000, 10, resetIn, time.Hour), tl, 0, false)
	took, failed := run(30, githubCall(githubClient(t, srv.URL, autoClient(t, false))), nil)
	r := row{name: "GitHub: primary 403, 10 left, the window resets in 3-4 s, 30 calls, Auto (go-github)", calls: 30, failed: failed, took: took, floor: resetIn}
	tl.fill(&r)
	r.asked = resetIn - time.Second
	return r
}

func caseAutoGitHubSecondary(t *testing.T) row {
	tl := newTally()
	srv := githubFake(t, newWindow(5000, 5000, time.Hour, time.Hour), tl, 12, false)
	took, failed := run(24, githubCall(githubClient(t, srv.URL, autoClient(t, false))), nil)
	r := row{name: "GitHub: secondary 403 with retry-after 2 while 4,990 remain, 24 calls, Auto (go-github)", calls: 24, failed: failed, took: took, floor: 2 * time.Second, asked: 2 * time.Second}
	tl.fill(&r)
	return r
}

// geminiWindows answers generateContent under 8 calls a 3 s window, a 429
// RESOURCE_EXHAUSTED naming the wait to the window's end in its body only.
func geminiWindows(t *testing.T, tl *tally) string {
	q := newWindow(8, 8, 3*time.Second, 3*time.Second)
	return fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		call := r.Header.Get("X-Call")
		tl.attempt(call)
		ok, _, reset := q.take(1)
		if !ok {
			tl.refuse(call)
			writeJSON(w, 429, map[string]any{"error": map[string]any{"code": 429, "message": "You exceeded your current quota.", "status": "RESOURCE_EXHAUSTED",
				"details": []any{
					map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests", "quotaId": "GenerateRequestsPerWindow"}}},
					map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": strconv.FormatFloat(reset.Seconds(), 'f', 3, 64) + "s"},
				}}})
			return
		}
		writeJSON(w, 200, map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": "ok"}}}, "finishReason": "STOP"}},
			"usageMetadata": map[string]any{"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4}})
	}).URL
}

func caseGeminiWindows(t *testing.T, auto bool) row {
	tl := newTally()
	url := geminiWindows(t, tl)
	hc := autoClient(t, true)
	name := "Gemini: 24 calls at once, 8 a 3 s window, RetryInfo in the body, Auto+llm.Config (genai)"
	if !auto {
		hc, _ = llmClient(t, llmLimiter(t, 8, 1000000, 3*time.Second))
		name = "Gemini: 24 calls at once, 8 a 3 s window, RetryInfo in the body, llm.Config (genai)"
	}
	took, failed := run(24, geminiCall(geminiClient(t, url, hc)), nil)
	r := row{name: name, calls: 24, failed: failed, took: took, floor: 6 * time.Second}
	tl.fill(&r)
	return r
}

// caseAnthropicOutput: 30 calls 66 ms apart, each reserving max_tokens 100
// and writing 50, against 8,000 output tokens a minute of which 1,000
// remain, the counts rounded to the thousand as Anthropic rounds them.
func caseAnthropicOutput(t *testing.T, auto bool) row {
	tl := newTally()
	const rate = 8000.0 / 60
	out := newContinuous(8000, 1000, rate)
	srv := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		call := r.Header.Get("X-Call")
		tl.attempt(call)
		ok, left, reset := out.take(50)
		now := time.Now()
		headers.SetDate(w.Header(), now)
		headers.SetAnthropic(w.Header(), "requests", 4000, 3999, 15*time.Millisecond, now)
		headers.SetAnthropic(w.Header(), "output-tokens", 8000, int64(math.Round(left/1000))*1000, reset, now)
		if !ok {
			tl.refuse(call)
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil((50-left)/rate))))
			writeJSON(w, 429, map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": "This request would exceed your organization's rate limit of 8,000 output tokens per minute."}})
			return
		}
		msg := map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-5-5",
			"content": []any{map[string]any{"type": "text", "text": "ok"}}, "stop_reason": "end_turn",
			"usage": map[string]any{"input_tokens": 9, "output_tokens": 50}}
		writeJSON(w, 200, msg)
	})
	hc := autoClient(t, true)
	name := "Anthropic: 30 calls 66 ms apart writing 50 of max_tokens 100, 1,000 of 8,000 OTPM left, Auto+llm.Config (anthropic-sdk-go)"
	if !auto {
		req := must(throttle.New(4000, throttle.Per(4000, time.Minute), throttle.WithName("requests")))
		otpm := must(throttle.New(8000, throttle.Per(8000, time.Minute), throttle.WithName("output-tokens")))
		hc, _ = llmClient(t, must(throttle.NewLimiter(req, otpm)))
		name = "Anthropic: 30 calls 66 ms apart writing 50 of max_tokens 100, 1,000 of 8,000 OTPM left, llm.Config (anthropic-sdk-go)"
	}
	c := anthropicClient(srv.URL, hc)
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for i := range 30 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
			defer cancel()
			_, err := c.Messages.New(ctx, anthropic.MessageNewParams{
				Model: anthropic.ModelClaudeHaiku5_5, MaxTokens: 100,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Write a story."))},
			}, aoption.WithHeader("X-Call", "c"+strconv.Itoa(i)))
			if err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		})
		time.Sleep(66 * time.Millisecond) // the calls' arrivals, not a wait for a goroutine
	}
	wg.Wait()
	// The quota's floor: 1,500 tokens written, 1,000 there, the rest at
	// its rate.
	floor := time.Duration((1500.0 - 1000) / rate * float64(time.Second))
	r := row{name: name, calls: 30, failed: failed, took: time.Since(start), floor: floor}
	tl.fill(&r)
	return r
}

// TestVendorsOutside runs the cases of issue 42 and checks every row.
func TestVendorsOutside(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: about 60 s")
	}
	// slow names the rows whose time is not yet within 1.5x the floor + 2 s,
	// with the issue that stays open for them: their time is reported, not
	// checked; every other check of theirs still is. None is, today.
	slow := map[string]string{}
	cases := []struct {
		name string
		run  func(t *testing.T) row
	}{
		{"openai-auto-burst", caseAutoOpenAIBurst},
		{"anthropic-auto-burst", caseAutoAnthropicBurst},
		{"openai-token-streams", func(t *testing.T) row { return caseOpenAITokenStreams(t, false) }},
		{"openai-token-streams-auto", func(t *testing.T) row { return caseOpenAITokenStreams(t, true) }},
		{"github-primary-auto", caseAutoGitHubPrimary},
		{"github-secondary-auto", caseAutoGitHubSecondary},
		{"gemini-windows", func(t *testing.T) row { return caseGeminiWindows(t, false) }},
		{"gemini-windows-auto", func(t *testing.T) row { return caseGeminiWindows(t, true) }},
		{"anthropic-output", func(t *testing.T) row { return caseAnthropicOutput(t, false) }},
		{"anthropic-output-auto", func(t *testing.T) row { return caseAnthropicOutput(t, true) }},
	}
	only := os.Getenv("THROTTLE_OUTSIDE_CASES")
	var rows []row
	for _, c := range cases {
		if only != "" && !strings.Contains(","+only+",", ","+c.name+",") {
			continue
		}
		r := c.run(t)
		bad := r.checks()
		for _, b := range bad {
			if why := slow[c.name]; why != "" && strings.HasPrefix(b, "took ") {
				t.Logf("%s: %s (not met yet: %s)", r.name, b, why)
				r.note = strings.TrimSpace("not met yet: " + why + ". " + r.note)
				continue
			}
			t.Errorf("%s: %s", r.name, b)
		}
		if len(bad) == 0 {
			r.note = strings.TrimSpace("all checks hold. " + r.note)
		}
		if r.floor > 0 {
			r.note = strings.TrimSpace(fmt.Sprintf("%.2fx the floor. %s", float64(r.took)/float64(r.floor), r.note))
		}
		rows = append(rows, r)
	}
	var sb strings.Builder
	sb.WriteString("| case | calls | failed | most attempts | took | floor | note |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "| %s | %d | %d | %d | %v | %v | %s |\n", r.name, r.calls, r.failed, r.maxAttempts,
			r.took.Round(time.Millisecond), r.floor.Round(time.Millisecond), r.note)
	}
	t.Log("\n" + sb.String())
	if f := os.Getenv("THROTTLE_OUTSIDE_TABLE"); f != "" {
		os.WriteFile(f, []byte(sb.String()), 0o644)
	}
}
