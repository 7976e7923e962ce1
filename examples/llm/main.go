// Command llm gates calls to an OpenAI-style API on both of its quotas,
// requests per second and tokens per second, with the official OpenAI Go
// SDK over httpthrottle.Transport, against a fake vendor on loopback
// (throttletest).
//
// Each call reserves its estimate before it is sent (the prompt's estimated
// tokens plus max_tokens: about 215) and, with an llm.Config, is settled to the
// usage the response reports (about 55 tokens). The program runs the same 40 calls
// twice: reserving only, where the token quota binds, and reserving then
// settling, where the unused tokens come back and only the request quota
// binds.
//
//	go run ./examples/llm
package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/throttletest"
)

const calls = 40

func main() {
	vendor := throttletest.NewServer(throttletest.Config{
		Requests: throttle.Per(20, time.Second), RequestBurst: 10,
		Tokens: throttle.Per(2000, time.Second), TokenBurst: 2000,
		ReplyTokens: 40, Dialect: throttletest.OpenAI,
	})
	defer vendor.Close()
	fmt.Printf("fake vendor at %s: per API key 20 requests/s (bursts of 10) and 2000 tokens/s, OpenAI-style headers\n\n", vendor.URL)

	cfg := llm.Config{}
	for _, run := range []struct {
		name string
		opt  httpthrottle.Option
	}{
		{"reserve only", httpthrottle.WithCost(cfg.Cost)},
		{"reserve and settle", httpthrottle.WithAccounting(cfg)},
	} {
		limiter := newLimiter()
		tr, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(limiter), run.opt)
		if err != nil {
			panic(err)
		}
		before := vendor.Stats()
		failed, took := callAll(vendor.URL, "sk-"+run.name, tr)
		after := vendor.Stats()
		st := tr.Stats()
		fmt.Printf("%-19s %d calls, %d failed, in %v\n", run.name+":", calls, failed, took.Round(time.Millisecond))
		fmt.Printf("%-19s vendor: %d refused with 429, %d tokens used (%d a call); transport: %d retried, waited %v in all\n",
			"", after.Throttled-before.Throttled, after.Tokens-before.Tokens, (after.Tokens-before.Tokens)/calls,
			st.Retried, st.Waited.Round(time.Millisecond))
	}
}

// newLimiter returns a gate matching the vendor's quotas: limits named
// "requests" and "tokens", which llm.Config counts in requests and in
// tokens, and which the vendor's x-ratelimit-remaining-* headers lower.
func newLimiter() *throttle.Limiter {
	requests, err := throttle.New(10, throttle.Per(20, time.Second), throttle.WithName("requests"))
	if err != nil {
		panic(err)
	}
	tokens, err := throttle.New(2000, throttle.Per(2000, time.Second), throttle.WithName("tokens"))
	if err != nil {
		panic(err)
	}
	l, err := throttle.NewLimiter(requests, tokens)
	if err != nil {
		panic(err)
	}
	return l
}

// callAll makes the calls concurrently through the SDK and returns how many
// failed and how long they took.
func callAll(url, key string, tr http.RoundTripper) (failed int64, took time.Duration) {
	client := openai.NewClient(
		option.WithBaseURL(url+"/v1/"),
		option.WithAPIKey(key),
		option.WithHTTPClient(&http.Client{Transport: tr}),
	)
	var fails atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range calls {
		wg.Go(func() {
			_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:     openai.ChatModelGPT4oMini,
				Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("Give one fact about the number %d.", i))},
				MaxTokens: openai.Int(200),
			})
			if err != nil {
				fails.Add(1)
				fmt.Println("error:", err)
			}
		})
	}
	wg.Wait()
	return fails.Load(), time.Since(start)
}
