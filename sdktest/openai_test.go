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
	"github.com/throttlekit/throttle/throttletest"
)

// TestTransportOpenAISDK runs 100 concurrent chat completions through the
// official OpenAI SDK, which retries on its own (twice), against a vendor
// allowing 10 requests per second with a burst of 10. Without the
// transport most calls fail after the SDK's retries; with it, none does,
// and the calls take close to the 9 s the quota needs for the 90 beyond the
// burst. It runs on the real clock, for about 12 s in all: the only slow
// test of the package, skipped with -short.
func TestTransportOpenAISDK(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock test of about 12 s")
	}
	const calls = 100
	vendor := throttletest.NewServer(throttletest.Config{
		Requests: throttle.Per(10, time.Second), RequestBurst: 10, Dialect: throttletest.OpenAI,
	})
	defer vendor.Close()

	// run makes the calls with the API key key (the vendor's quotas are per
	// key) through rt, and returns the calls that failed and the time taken.
	run := func(key string, rt http.RoundTripper) (failed int64, took time.Duration) {
		client := openai.NewClient(
			option.WithBaseURL(vendor.URL+"/v1/"),
			option.WithAPIKey(key),
			option.WithHTTPClient(&http.Client{Transport: rt}),
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
				if err != nil {
					fails.Add(1)
				}
			})
		}
		wg.Wait()
		return fails.Load(), time.Since(start)
	}

	plain := newBase(t)
	before := vendor.Stats()
	failed, took := run("sk-plain", plain)
	st := vendor.Stats()
	t.Logf("without the transport: %d of %d calls failed in %v; the vendor answered %d of %d requests with 429",
		failed, calls, took.Round(time.Millisecond), st.Throttled-before.Throttled, st.Requests-before.Requests)
	if failed == 0 {
		t.Errorf("without the transport no call failed: the test no longer shows what the transport is for")
	}

	l := newLimiter(t, nil, 10, throttle.Per(10, time.Second))
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l)))
	before = vendor.Stats()
	failed, took = run("sk-throttled", tr)
	st = vendor.Stats()
	t.Logf("with the transport: %d of %d calls failed in %v; the vendor answered %d of %d requests with 429; transport %+v",
		failed, calls, took.Round(time.Millisecond), st.Throttled-before.Throttled, st.Requests-before.Requests, tr.Stats())
	if failed != 0 {
		t.Errorf("%d calls failed through the transport, want none", failed)
	}
	// The quota allows the 100 calls in 9 s at best; the vendor refuses any
	// faster pace, so a shorter time means the vendor stopped enforcing it.
	if took < 8900*time.Millisecond || took > 11*time.Second {
		t.Errorf("the calls took %v, want between 8.9s and 11s", took)
	}
}
