package sdktest_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/throttletest"
)

// TestAutoOpenAISDK runs 100 concurrent chat completions through the
// official OpenAI SDK and a Transport with auto.New(), configured with
// nothing, against a vendor allowing 10 requests per second (burst 10) that
// publishes its quota in the IETF fields. Auto learns the quota from the
// first response: no call fails, and the calls take a little more than the 9 s the quota
// needs (12.7 s measured: the first share is small). Real clock, about
// 13 s; skipped with -short.
func TestAutoOpenAISDK(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock test of about 10 s")
	}
	const calls = 100
	vendor := throttletest.NewServer(throttletest.Config{
		Requests: throttle.Per(10, time.Second), RequestBurst: 10, Dialect: throttletest.IETF,
	})
	defer vendor.Close()
	learned := must(auto.New())
	tr := must(httpthrottle.NewTransport(newBase(t), learned))
	client := openai.NewClient(
		option.WithBaseURL(vendor.URL+"/v1/"),
		option.WithAPIKey("sk-auto"),
		option.WithHTTPClient(&http.Client{Transport: tr}),
	)
	var fails atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range calls {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model:    openai.ChatModelGPT4oMini,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say ok.")},
			})
			if err != nil && fails.Add(1) == 1 {
				t.Logf("first failure after %v: %v", time.Since(start), err)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	st := vendor.Stats()
	t.Logf("Auto: %d of %d calls failed in %v; the vendor answered %d of %d requests with 429; learned %+v",
		fails.Load(), calls, took.Round(time.Millisecond), st.Throttled, st.Requests, learned.Stats())
	if fails.Load() != 0 {
		t.Errorf("%d calls failed", fails.Load())
	}
	if st.Throttled > 3 {
		t.Errorf("%d requests refused; want at most 3", st.Throttled)
	}
	if took > 15*time.Second {
		t.Errorf("the calls took %v; want at most 15s (the quota needs 9s)", took)
	}
	ls := learned.Stats()
	if len(ls) != 1 || len(ls[0].Limits) == 0 || !ls[0].Limits[0].Learned {
		t.Errorf("learned %+v; want one quota, learned from the headers", ls)
	}
}

// TestAutoLLMTokenShare makes one chat completion, then 30 concurrent ones,
// through the official OpenAI SDK, a Transport with auto.New() and
// WithAccounting, against a vendor in OpenAI's dialect allowing 600 requests and
// 60,000 tokens a minute (burst a minute of each): each call reserves its
// prompt and its 500 max tokens. Once the first response has taught the
// limits, Auto's first share of the token limit must let the calls through
// within their 3 s deadlines (a twentieth of the rate, as before, let 5
// through at once, then one every 10 s: 30 of 31 calls failed), and no call may be
// refused as oversized without RefuseOversized. (Calls made before any
// response queue on the starting 2 per second, which admits about 40
// within 20 s: 60 calls at once with 20 s deadlines lose 16 there, before
// anything is learned.) Real clock, well under a second; skipped with
// -short.
func TestAutoLLMTokenShare(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock test")
	}
	const calls = 30
	vendor := throttletest.NewServer(throttletest.Config{
		Requests: throttle.Per(600, time.Minute), Tokens: throttle.Per(60000, time.Minute), Dialect: throttletest.OpenAI,
	})
	defer vendor.Close()
	learned := must(auto.New())
	tr := must(httpthrottle.NewTransport(newBase(t), learned, httpthrottle.WithAccounting(llm.Config{})))
	client := openai.NewClient(
		option.WithBaseURL(vendor.URL+"/v1/"),
		option.WithAPIKey("sk-auto-llm"),
		option.WithHTTPClient(&http.Client{Transport: tr}),
	)
	var fails, oversized atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range calls + 1 {
		if i == 1 {
			wg.Wait() // the first call has taught the limits
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			var resp *http.Response
			_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model:     openai.ChatModelGPT4oMini,
				MaxTokens: openai.Int(500),
				Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say ok.")},
			}, option.WithResponseInto(&resp))
			if err != nil {
				fails.Add(1)
				if resp != nil && resp.Header.Get(httpthrottle.RefusalHeader) == "oversized" {
					oversized.Add(1)
				}
				t.Logf("a call failed after %v: %v", time.Since(start), err)
			}
		})
	}
	wg.Wait()
	t.Logf("%d of %d calls failed (%d oversized) in %v; learned %+v", fails.Load(), calls+1, oversized.Load(), time.Since(start).Round(time.Millisecond), learned.Stats())
	if fails.Load() != 0 || oversized.Load() != 0 {
		t.Errorf("%d calls failed, %d as oversized; want none", fails.Load(), oversized.Load())
	}
}
