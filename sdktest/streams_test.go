package sdktest_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/throttletest"
)

// TestOpenAIStreamsSettle runs 30 concurrent streamed chat completions
// through openai-go and docs/llm.md's setup against a vendor whose token
// quota binds, and compares the time taken with the least the quota needs
// (quotaFloor). Each stream reserves its prompt plus max_tokens (4096 when
// unset, capped at the bucket's capacity) and uses far less; settled from
// the usage the stream reports (or, without include_usage, from its text),
// the calls finish close to the floor. Real clock, about 7 s in all.
func TestOpenAIStreamsSettle(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock test of about 7 s")
	}
	for _, tt := range []struct {
		name         string
		maxTokens    int64 // 0: unset
		reply        int64
		includeUsage bool
		rate         int64 // tokens a second, and the capacity
	}{
		{"max_tokens 1000, 150 used", 1000, 150, true, 2000},
		{"no max_tokens, 200 used", 0, 200, true, 3000},
		{"no max_tokens, no usage reported", 0, 200, false, 3000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const calls = 30
			vendor := throttletest.NewServer(throttletest.Config{
				Requests: throttle.Per(10000, time.Second), Tokens: throttle.Per(tt.rate, time.Second),
				Dialect: throttletest.OpenAI, ReplyTokens: tt.reply, StreamChunkTokens: 10,
			})
			defer vendor.Close()
			l := llmLimiter(t, 10000, tt.rate, time.Second)
			hc, tr := llmClient(t, l)
			client := openai.NewClient(option.WithBaseURL(vendor.URL+"/v1/"), option.WithAPIKey("sk-stream"), option.WithHTTPClient(hc))
			params := openai.ChatCompletionNewParams{
				Model:    openai.ChatModelGPT4oMini,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say ok.")},
			}
			if tt.maxTokens > 0 {
				params.MaxTokens = openai.Int(tt.maxTokens)
			}
			if tt.includeUsage {
				params.StreamOptions.IncludeUsage = openai.Bool(true)
			}
			var failed, reported atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for range calls {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					defer cancel()
					s := client.Chat.Completions.NewStreaming(ctx, params)
					for s.Next() {
						if s.Current().Usage.TotalTokens > 0 {
							reported.Add(1)
						}
					}
					if s.Err() != nil {
						failed.Add(1)
						t.Log(s.Err())
					}
					s.Close()
				})
			}
			wg.Wait()
			took := time.Since(start)
			st := vendor.Stats()
			used := st.Tokens / calls
			reserve := used - tt.reply + tt.maxTokens
			if tt.maxTokens == 0 {
				reserve = used - tt.reply + 4096
			}
			floor := quotaFloor(float64(tt.rate), float64(tt.rate), calls, float64(reserve), float64(used))
			t.Logf("%d streams in %v, floor %v: %.2fx; vendor: %d refused, %d tokens a call; %d reported usage; transport %+v",
				calls, took.Round(time.Millisecond), floor.Round(time.Millisecond), float64(took)/float64(floor), st.Throttled, used, reported.Load(), tr.Stats())
			if failed.Load() != 0 || st.Throttled != 0 {
				t.Errorf("%d streams failed, %d refused, want none", failed.Load(), st.Throttled)
			}
			if tt.includeUsage && reported.Load() != calls {
				t.Errorf("%d streams reported usage, want %d", reported.Load(), calls)
			}
			// A sanity bound for a shared machine; the figure is measured
			// and reported with the benchmarks.
			if took > floor*3/2+200*time.Millisecond {
				t.Errorf("took %v, more than 1.5x the floor %v", took, floor)
			}
			// Every call settled: the limiter holds no reservation.
			if lvl := l.Bucket("tokens").Status().Level; lvl < 0 || lvl > float64(tt.rate) {
				t.Errorf("tokens level %v", lvl)
			}
		})
	}
}
