package sdktest_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// promptCall makes one call with a Stainless SDK at its defaults through
// hc, with prompt as the user's message, streamed or not; it returns the
// call's error.
type promptCall func(ctx context.Context, hc *http.Client, prompt string, maxTokens int64, stream bool) error

var stainless = map[string]func(url string) promptCall{
	"openai-go": func(url string) promptCall {
		return func(ctx context.Context, hc *http.Client, prompt string, maxTokens int64, stream bool) error {
			c := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("sk-o"), option.WithHTTPClient(hc))
			p := openai.ChatCompletionNewParams{
				Model: openai.ChatModelGPT4oMini, MaxTokens: openai.Int(maxTokens),
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
			}
			if !stream {
				_, err := c.Chat.Completions.New(ctx, p)
				return err
			}
			p.StreamOptions.IncludeUsage = openai.Bool(true)
			s := c.Chat.Completions.NewStreaming(ctx, p)
			for s.Next() {
			}
			defer s.Close()
			return s.Err()
		}
	},
	"anthropic-sdk-go": func(url string) promptCall {
		return func(ctx context.Context, hc *http.Client, prompt string, maxTokens int64, stream bool) error {
			c := anthropic.NewClient(aoption.WithBaseURL(url+"/"), aoption.WithAPIKey("sk-a"), aoption.WithHTTPClient(hc))
			p := anthropic.MessageNewParams{
				Model: anthropic.ModelClaudeHaiku5_5, MaxTokens: maxTokens,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
			}
			if !stream {
				_, err := c.Messages.New(ctx, p)
				return err
			}
			s := c.Messages.NewStreaming(ctx, p)
			for s.Next() {
			}
			defer s.Close()
			return s.Err()
		}
	},
}

// refusalHeaders are the 429s that name no usable wait: each must pause
// the limiter at least as a bare one does.
var refusalHeaders = []struct {
	name string
	h    http.Header
}{
	{"bare", http.Header{}},
	{"zero", http.Header{"Retry-After": {"0"}}},
	{"negative", http.Header{"Retry-After": {"-5"}}},
	{"past date", http.Header{"Retry-After": {time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)}}},
	{"garbage", http.Header{"Retry-After": {"soon, please"}}},
}

// TestRetryNowDoesNotSpinSDKs: a vendor refuses every call with a 429 that
// names no usable wait (none, zero, negative, a date an hour past,
// garbage). Through the Transport, a burst of 10 calls with each Stainless
// SDK at its defaults sends no attempt of one call within 250 ms of the
// last, and no more than its 10 first attempts within 250 ms of the first
// refusal: the limiter holds a pause the SDK's own retries and the other
// callers wait out. Real clock: about 2 s for each SDK, its cases in
// parallel.
func TestRetryNowDoesNotSpinSDKs(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock test of about 4 s")
	}
	for name, sdk := range stainless {
		t.Run(name, func(t *testing.T) {
			for _, rh := range refusalHeaders {
				t.Run(rh.name, func(t *testing.T) {
					t.Parallel()
					vendor := newQuotaVendor(t, 0, 0)
					vendor.refuse = rh.h
					call := sdk(vendor.URL)
					hc, _ := llmClient(t, llmLimiter(t, 500, 200000, time.Minute))
					var wg sync.WaitGroup
					for i := range 10 {
						wg.Go(func() {
							ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
							defer cancel()
							if err := call(ctx, hc, fmt.Sprintf("Call %d: say ok.", i), 100, false); err == nil {
								t.Error("a call succeeded against a vendor that refuses them all")
							}
						})
					}
					wg.Wait()
					rec := vendor.record()
					gap, early := rec.minGap(), rec.attemptsWithin(250*time.Millisecond)
					t.Logf("%d attempts; closest two of one call %v apart; %d within 250ms of the first refusal",
						len(rec.attempts), gap.Round(time.Millisecond), early)
					if gap < 250*time.Millisecond {
						t.Errorf("two attempts of one call %v apart, want at least 250ms", gap)
					}
					if early > 10 {
						t.Errorf("%d attempts within 250ms of the first refusal, want at most 10", early)
					}
					if len(rec.attempts) > 30 {
						t.Errorf("%d attempts for 10 calls, more than the SDK's 3 each", len(rec.attempts))
					}
				})
			}
		})
	}
}

// TestRefusedEveryAttemptSDKs: calls the vendor refuses on every attempt,
// with a bare 429 or a garbage Retry-After, keep through the Transport the
// SDK's own schedule: no more attempts than with the SDK alone, and each
// retry of a call at most 1.2x the SDK's longest back-off for it after the
// attempt before (plus 150 ms for a loaded machine): the limiter's pause
// ends within the SDK's back-off instead of adding to it. The bound is the
// SDK's documented schedule, checked against the SDK alone in the same
// run, not a ratio of two wall-clock runs that the SDK's own jitter (up to
// a quarter of each back-off) would make flaky.
//
// A call's schedule starts at its first attempt: a call whose first
// attempt reached the limiter after another call's refusal waits that
// pause out first, as every other caller does (logged, not bounded here;
// TestOtherCallsWaitRefusedCallsPauses pins it on a fake clock).
// Real clock: about 3 s, the cases in parallel.
func TestRefusedEveryAttemptSDKs(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock test of about 3 s")
	}
	const n = 4
	for name, sdk := range stainless {
		for _, rh := range []int{0, 4} {
			t.Run(name+"/"+refusalHeaders[rh].name, func(t *testing.T) {
				t.Parallel()
				run := func(hc *http.Client) vendorRecord {
					vendor := newQuotaVendor(t, 0, 0)
					vendor.refuse = refusalHeaders[rh].h
					call := sdk(vendor.URL)
					var wg sync.WaitGroup
					for i := range n {
						wg.Go(func() {
							if call(context.Background(), hc, fmt.Sprintf("Call %d: say ok.", i), 100, false) == nil {
								t.Error("a call succeeded against a vendor that refuses them all")
							}
						})
					}
					wg.Wait()
					return vendor.record()
				}
				alone := run(&http.Client{Transport: newBase(t)})
				hc, tr := llmClient(t, llmLimiter(t, 500, 200000, time.Minute))
				with := run(hc)
				aloneSpan, withSpan := alone.medianSpan(), with.medianSpan()
				t.Logf("alone: %d attempts, median span %v; through the Transport: %d attempts, median span %v (%.2fx), first attempts held up to %v; %+v",
					len(alone.attempts), aloneSpan.Round(time.Millisecond), len(with.attempts), withSpan.Round(time.Millisecond),
					float64(withSpan)/float64(aloneSpan), with.firstHeld().Round(time.Millisecond), tr.Stats())
				if len(with.attempts) > len(alone.attempts) {
					t.Errorf("%d attempts through the Transport, %d alone", len(with.attempts), len(alone.attempts))
				}
				// The SDK's schedule: 0.5 s doubling, less up to a quarter.
				bound := func(retry int) time.Duration {
					return (500*time.Millisecond<<(retry-1))*6/5 + 150*time.Millisecond
				}
				if retry, gap := alone.slowestRetry(bound); gap > 0 {
					t.Fatalf("the SDK alone sent retry %d %v after the attempt before, past %v: its schedule is not the one this test bounds", retry, gap, bound(retry))
				}
				if retry, gap := with.slowestRetry(bound); gap > 0 {
					t.Errorf("through the Transport, retry %d of a call went %v after the attempt before, past %v (1.2x the SDK's longest back-off)", retry, gap, bound(retry))
				}
			})
		}
	}
}

// TestStreamsHoldReservationSDKs: 30 concurrent streams of 4,000-token
// prompts with max_tokens 1,000 and include_usage, through each Stainless
// SDK at its defaults, against a vendor of 40,000 tokens a window (a
// minute scaled to a second) that reserves prompt plus max_tokens at
// admission, sends its rate headers then, and gives back the unused part
// when the stream ends (quotaVendor, exact in integers). The Transport
// holds each stream's estimate until its usage arrives in its last event,
// and no header that left at admission raises or refunds the limiter
// early: no failed stream, at most 3 vendor 429s, and no token offered
// beyond what the vendor's quota held (quotaVendor.beyond), with openai-go
// (usage in the last chunk) as with anthropic-sdk-go. Every 429 of the
// token quota is an offer beyond it, so the last two bounds hold together
// only at 0 429s. Real clock: about 2.5 s for each SDK.
func TestStreamsHoldReservationSDKs(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock test of about 5 s")
	}
	const (
		calls     = 30
		maxTokens = 1000
		quota     = 40000
		window    = time.Second
	)
	prompt := func(i int) string {
		return fmt.Sprintf("Call %d: %s", i, strings.Repeat("lorem ", 3990))
	}
	if in, _ := estimate([]byte(fmt.Sprintf(`{"messages":[{"role":"user","content":%q}]}`, prompt(0)))); in < 3900 || in > 4100 {
		t.Fatalf("the prompt counts %d tokens, want about 4000", in)
	}
	for name, sdk := range stainless {
		t.Run(name, func(t *testing.T) {
			vendor := newQuotaVendor(t, quota, window)
			vendor.interval = 20 * time.Millisecond
			call := sdk(vendor.URL)
			hc, tr := llmClient(t, llmLimiter(t, quota, quota, window))
			var failed atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for i := range calls {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					if err := call(ctx, hc, prompt(i), maxTokens, true); err != nil {
						failed.Add(1)
						t.Log(err)
					}
				})
			}
			wg.Wait()
			took := time.Since(start)
			rec := vendor.record()
			in, _ := estimate([]byte(fmt.Sprintf(`{"messages":[{"role":"user","content":%q}]}`, prompt(10))))
			floor := quotaFloor(quota, quota/window.Seconds(), calls, float64(in+maxTokens), float64(in+vendor.reply))
			t.Logf("%s: %d streams in %v (floor %v, %.2fx): %d vendor 429s, %d tokens offered beyond the quota, %d failed; %+v",
				name, calls, took.Round(time.Millisecond), floor.Round(time.Millisecond), float64(took)/float64(floor),
				rec.refused, rec.beyond, failed.Load(), tr.Stats())
			if rec.refused > 3 || rec.beyond != 0 || failed.Load() != 0 {
				t.Errorf("%d vendor 429s, %d tokens beyond the quota, %d failed; want at most 3, 0 and 0", rec.refused, rec.beyond, failed.Load())
			}
		})
	}
}
