package sdktest_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/jonboulle/clockwork"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/throttletest"
)

// fakeLimiter is llmLimiter on a fake clock that never moves: levels change
// only by what the calls take and settle.
func fakeLimiter(t testing.TB) *throttle.Limiter {
	t.Helper()
	fc := clockwork.NewFakeClock()
	r, _ := throttle.New(100, throttle.Per(100, time.Minute), throttle.WithName("requests"), throttle.WithClock(fc))
	tok, _ := throttle.New(100000, throttle.Per(100000, time.Minute), throttle.WithName("tokens"), throttle.WithClock(fc))
	l, err := throttle.NewLimiter(r, tok)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestAnthropicSDK: messages, plain and streamed, through anthropic-sdk-go
// v2 and the transport are settled to the usage the vendor reports.
func TestAnthropicSDK(t *testing.T) {
	vendor := throttletest.NewServer(throttletest.Config{Dialect: throttletest.Anthropic, ReplyTokens: 21, Tokens: throttle.Per(1_000_000, time.Minute)})
	defer vendor.Close()
	l := fakeLimiter(t)
	hc, _ := llmClient(t, l)
	client := anthropic.NewClient(aoption.WithBaseURL(vendor.URL+"/"), aoption.WithAPIKey("sk-ant"), aoption.WithHTTPClient(hc))
	params := anthropic.MessageNewParams{
		Model: anthropic.ModelClaudeHaiku5_5, MaxTokens: 1000,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say ok."))},
	}
	ctx := context.Background()
	msg, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	used := msg.Usage.InputTokens + msg.Usage.OutputTokens
	if got := 100000 - l.Bucket("tokens").Status().Level; got != float64(used) || msg.Usage.OutputTokens != 21 {
		t.Errorf("settled %v tokens, the vendor reported %d (%d out)", got, used, msg.Usage.OutputTokens)
	}
	s := client.Messages.NewStreaming(ctx, params)
	var acc anthropic.Message
	for s.Next() {
		if err := acc.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	streamed := acc.Usage.InputTokens + acc.Usage.OutputTokens
	if got := 100000 - l.Bucket("tokens").Status().Level; got != float64(used+streamed) || acc.Usage.OutputTokens != 21 {
		t.Errorf("settled %v tokens after the stream, the vendor reported %d then %d", got, used, streamed)
	}
}

// TestGoOpenAI: chat completions, plain and streamed, through
// sashabaranov/go-openai and the transport are settled to the usage the
// vendor reports.
func TestGoOpenAI(t *testing.T) {
	vendor := throttletest.NewServer(throttletest.Config{Dialect: throttletest.OpenAI, ReplyTokens: 13, Tokens: throttle.Per(1_000_000, time.Minute)})
	defer vendor.Close()
	l := fakeLimiter(t)
	hc, _ := llmClient(t, l)
	cfg := goopenai.DefaultConfig("sk-go")
	cfg.BaseURL = vendor.URL + "/v1"
	cfg.HTTPClient = hc
	client := goopenai.NewClientWithConfig(cfg)
	req := goopenai.ChatCompletionRequest{
		Model: goopenai.GPT4oMini, MaxTokens: 500,
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "Say ok."}},
	}
	ctx := context.Background()
	resp, err := client.CreateChatCompletion(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := 100000 - l.Bucket("tokens").Status().Level; got != float64(resp.Usage.TotalTokens) || resp.Usage.CompletionTokens != 13 {
		t.Errorf("settled %v tokens, the vendor reported %+v", got, resp.Usage)
	}
	req.Stream, req.StreamOptions = true, &goopenai.StreamOptions{IncludeUsage: true}
	s, err := client.CreateChatCompletionStream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var usage *goopenai.Usage
	for {
		chunk, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
	}
	s.Close()
	if usage == nil {
		t.Fatal("the stream reported no usage")
	}
	if got := 100000 - l.Bucket("tokens").Status().Level; got != float64(resp.Usage.TotalTokens+usage.TotalTokens) {
		t.Errorf("settled %v tokens after the stream, the vendor reported %d then %d", got, resp.Usage.TotalTokens, usage.TotalTokens)
	}
}
