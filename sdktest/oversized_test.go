package sdktest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/throttletest"
)

// TestOversizedDelaysOthers: one prompt above the token quota among 50
// ordinary calls, all through openai-go and docs/llm.md's setup, is answered
// 429 "Request too large" once (the transport tells the SDK not to retry
// it), pauses and drains nothing, and delays the 50 by at most 5% (the
// request quota binds: 50 calls at 20 a second after a burst of 3). Real
// clock: about 10 s.
func TestOversizedDelaysOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock test of about 10 s")
	}
	run := func(oversized bool) time.Duration {
		vendor := throttletest.NewServer(throttletest.Config{
			Requests: throttle.Per(25, time.Second), RequestBurst: 5,
			Tokens: throttle.Per(20000, time.Second), Dialect: throttletest.OpenAI,
		})
		defer vendor.Close()
		// The client keeps a margin under the vendor's quota (20 a second,
		// bursts of 3), so that the jitter of loopback (large under the race
		// detector) seldom pushes a call over it.
		l := llmLimiter(t, 3, 20000, time.Second)
		l.Bucket("requests").SetRate(throttle.Per(20, time.Second))
		hc, tr := llmClient(t, l)
		client := openai.NewClient(option.WithBaseURL(vendor.URL+"/v1/"), option.WithAPIKey("sk-o"), option.WithHTTPClient(hc))
		call := func(prompt string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model: openai.ChatModelGPT4oMini, MaxTokens: openai.Int(100),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
			})
			return err
		}
		var wg sync.WaitGroup
		if oversized {
			wg.Go(func() {
				err := call(strings.Repeat("word ", 20000)) // 25,000 tokens
				var e *openai.Error
				if !errors.As(err, &e) || e.StatusCode != 429 || !strings.Contains(e.Message, "Request too large") {
					t.Errorf("the oversized call: %v, want the vendor's 429 Request too large", err)
				}
			})
		}
		start := time.Now()
		var others sync.WaitGroup
		for range 50 {
			others.Go(func() {
				if err := call("Say ok."); err != nil {
					t.Error(err)
				}
			})
		}
		others.Wait()
		took := time.Since(start)
		wg.Wait()
		vs, ts := vendor.Stats(), tr.Stats()
		if oversized && vs.TooLarge != 1 {
			t.Errorf("vendor %+v: want one refusal as too large", vs)
		}
		// The refusal paused and emptied nothing: the transport heeded as
		// throttles only the vendor's quota 429s (none, unless loopback's
		// jitter pushed a call over the quota), and retried nothing.
		if ts.Throttled != vs.Throttled || ts.Retried != 0 {
			t.Errorf("transport %+v, vendor %+v: want the vendor's throttles only, and no retry", ts, vs)
		}
		return took
	}
	// Twice each, alternately; the least of each pair of runs is compared,
	// as a stall of the shared machine only ever adds time.
	alone, with := run(false), run(true)
	alone, with = min(alone, run(false)), min(with, run(true))
	t.Logf("50 calls: %v alone, %v with an oversized call among them (%.3fx; the least of 2 runs each)", alone.Round(time.Millisecond), with.Round(time.Millisecond), float64(with)/float64(alone))
	if with > alone*105/100 {
		t.Errorf("one oversized call delayed 50 others by %.1f%%, more than 5%%", 100*(float64(with)/float64(alone)-1))
	}
}
