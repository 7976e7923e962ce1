package sdktest_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/throttletest"
)

// sdkCall makes one call with an SDK through hc and returns its error and
// the HTTP status it carries (0 if none).
type sdkCall func(ctx context.Context, hc *http.Client) (status int, err error)

func sdkCalls(vendorURL string) map[string]sdkCall {
	return map[string]sdkCall{
		"openai-go": func(ctx context.Context, hc *http.Client) (int, error) {
			c := openai.NewClient(option.WithBaseURL(vendorURL+"/v1/"), option.WithAPIKey("sk-o"), option.WithHTTPClient(hc))
			_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model: openai.ChatModelGPT4oMini, MaxTokens: openai.Int(100),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say ok.")},
			})
			var e *openai.Error
			if errors.As(err, &e) {
				return e.StatusCode, err
			}
			return 0, err
		},
		"anthropic-sdk-go": func(ctx context.Context, hc *http.Client) (int, error) {
			c := anthropic.NewClient(aoption.WithBaseURL(vendorURL+"/"), aoption.WithAPIKey("sk-a"), aoption.WithHTTPClient(hc))
			_, err := c.Messages.New(ctx, anthropic.MessageNewParams{
				Model: anthropic.ModelClaudeHaiku5_5, MaxTokens: 100,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say ok."))},
			})
			var e *anthropic.Error
			if errors.As(err, &e) {
				return e.StatusCode, err
			}
			return 0, err
		},
		"go-openai": func(ctx context.Context, hc *http.Client) (int, error) {
			cfg := goopenai.DefaultConfig("sk-g")
			cfg.BaseURL, cfg.HTTPClient = vendorURL+"/v1", hc
			_, err := goopenai.NewClientWithConfig(cfg).CreateChatCompletion(ctx, goopenai.ChatCompletionRequest{
				Model: goopenai.GPT4oMini, MaxTokens: 100,
				Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "Say ok."}},
			})
			var e *goopenai.APIError
			if errors.As(err, &e) {
				return e.HTTPStatusCode, err
			}
			return 0, err
		},
	}
}

// sdkAttempts is how many attempts each SDK makes at its defaults for a call
// refused every time without Retry-After.
var sdkAttempts = map[string]int64{"openai-go": 3, "anthropic-sdk-go": 3, "go-openai": 1}

// TestRefusedCallSDKs: against a vendor that refuses every call, each SDK
// through docs/llm.md's setup makes no more attempts than alone (plus the
// transport's own retries for go-openai, which has none). A 429
// insufficient_quota (a spent account, no Retry-After) comes back within
// 1.2x the time alone (the median of 4 concurrent calls, plus 100 ms for a
// shared machine); a 429 with a Retry-After-Ms of 100 ms is logged. Real
// clock: about 9 s.
func TestRefusedCallSDKs(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock test of about 9 s")
	}
	const n = 4
	for _, v := range []struct {
		name string
		cfg  throttletest.Config
	}{
		{"insufficient_quota", throttletest.Config{QuotaExhausted: true, Dialect: throttletest.OpenAI}},
		{"429 with Retry-After-Ms 100", throttletest.Config{RefuseAllRetryAfter: 100 * time.Millisecond, Dialect: throttletest.OpenAI}},
	} {
		vendor := throttletest.NewServer(v.cfg)
		defer vendor.Close()
		for name, call := range sdkCalls(vendor.URL) {
			t.Run(v.name+"/"+name, func(t *testing.T) {
				run := func(hc *http.Client) (attempts int64, median time.Duration) {
					before := vendor.Stats().Requests
					var mu sync.Mutex
					var took []time.Duration
					var wg sync.WaitGroup
					for range n {
						wg.Go(func() {
							start := time.Now()
							status, err := call(context.Background(), hc)
							d := time.Since(start)
							if status != 429 {
								t.Errorf("status %d, error %v; want the vendor's 429", status, err)
							}
							mu.Lock()
							took = append(took, d)
							mu.Unlock()
						})
					}
					wg.Wait()
					slices.Sort(took)
					return vendor.Stats().Requests - before, took[n/2]
				}
				aloneN, alone := run(&http.Client{Transport: newBase(t)})
				// docs/buckets.md's limits: 500 requests and 200,000 tokens a minute.
				hc, tr := llmClient(t, llmLimiter(t, 500, 200000, time.Minute))
				withN, with := run(hc)
				t.Logf("alone: %d attempts, median %v; through the transport: %d attempts, median %v (%.2fx); transport %+v",
					aloneN, alone.Round(time.Millisecond), withN, with.Round(time.Millisecond), float64(with)/float64(alone), tr.Stats())
				// The transport's own retries only where the SDK has none.
				most := aloneN
				if sdkAttempts[name] == 1 {
					most = aloneN * (1 + 3) // the Transport retries 3 times by default
				}
				if aloneN != n*sdkAttempts[name] || withN > most {
					t.Errorf("%d attempts alone, %d through the transport; want %d and at most %d", aloneN, withN, n*sdkAttempts[name], most)
				}
				// A refusal no wait cures comes back as fast as alone. One
				// with a Retry-After is paced: every 429 pauses the limiter
				// and the waiters are released at its rate after the pause,
				// which the log shows but no bound checks.
				if v.cfg.QuotaExhausted && with > alone*6/5+100*time.Millisecond {
					t.Errorf("the refusal took %v through the transport, %v alone", with, alone)
				}
			})
		}
	}
}

// TestDeadlineFailsFastSDKs: once the limiter knows the quota is spent for
// the next 10 s, a call whose deadline is 2 s away gets its error within
// 100 ms with every SDK, without reaching the vendor, and the error is the
// transport's *throttle.WaitError (matching context.DeadlineExceeded): as
// go-openai's own, or through the Stainless SDKs (which would retry an
// error for 1.3 s) from the body of the transport's 429 with
// x-should-retry: false, unretried.
func TestDeadlineFailsFastSDKs(t *testing.T) {
	vendor := throttletest.NewServer(throttletest.Config{
		Requests: throttle.Per(1, 10*time.Second), RequestBurst: 1,
		Tokens: throttle.Per(100000, time.Second), Dialect: throttletest.OpenAI,
	})
	defer vendor.Close()
	for name, call := range sdkCalls(vendor.URL) {
		t.Run(name, func(t *testing.T) {
			hc, _ := llmClient(t, llmLimiter(t, 1, 100000, 10*time.Second))
			if _, err := call(context.Background(), hc); err != nil {
				t.Fatalf("the first call: %v", err)
			}
			before := vendor.Stats().Requests
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			_, err := call(ctx, hc)
			took := time.Since(start)
			t.Logf("%v after %v", err, took)
			if took > 100*time.Millisecond || err == nil {
				t.Errorf("the call failed after %v with %v, want an error within 100ms", took, err)
			}
			if n := vendor.Stats().Requests - before; n != 0 {
				t.Errorf("the vendor saw %d requests, want none", n)
			}
			var we *throttle.WaitError
			if !errors.As(err, &we) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v (%T), want a *throttle.WaitError", err, err)
			}
		})
	}
}

// TestThrottledNoStackedRetries: a limiter set faster than the vendor
// allows gets 429s with Retry-After-Ms; the Stainless SDKs retry them
// themselves, and the transport adds none of its own: each call makes at
// most the SDK's 3 attempts. go-openai, which has no retries, gets the
// transport's.
func TestThrottledNoStackedRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock test of about 3 s")
	}
	vendor := throttletest.NewServer(throttletest.Config{
		Requests: throttle.Per(10, time.Second), RequestBurst: 2,
		Tokens: throttle.Per(1000000, time.Second), Dialect: throttletest.OpenAI,
	})
	defer vendor.Close()
	const calls = 10
	for name, call := range sdkCalls(vendor.URL) {
		t.Run(name, func(t *testing.T) {
			hc, tr := llmClient(t, llmLimiter(t, 100, 1000000, time.Second))
			before := vendor.Stats()
			var wg sync.WaitGroup
			for range calls {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					call(ctx, hc)
				})
			}
			wg.Wait()
			st, ts := vendor.Stats(), tr.Stats()
			t.Logf("vendor: %d requests, %d refused; transport %+v", st.Requests-before.Requests, st.Throttled-before.Throttled, ts)
			if name != "go-openai" && ts.Retried != 0 {
				t.Errorf("the transport retried %d times under a Stainless SDK", ts.Retried)
			}
			if st.Requests-before.Requests > calls*3 {
				t.Errorf("%d attempts for %d calls, more than the SDK's 3 each", st.Requests-before.Requests, calls)
			}
		})
	}
}
