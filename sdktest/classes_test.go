package sdktest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/htb"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/throttletest"
)

// TestClassesOpenAISDK sends chat completions of three teams through the
// official OpenAI SDK, each team's client a Transport over the
// htb.Limiter of its class of the organisation's quota, WithAccounting naming the
// class as the token limit: each call reserves its estimate and is charged
// what the response's usage reports.
func TestClassesOpenAISDK(t *testing.T) {
	vendor := throttletest.NewServer(throttletest.Config{
		Requests: throttle.Per(1000, time.Second), RequestBurst: 1000, Dialect: throttletest.OpenAI,
	})
	defer vendor.Close()
	clk := clockwork.NewFakeClock() // time stands still: levels show only what was spent
	org, err := htb.NewQuota(200_000, throttle.Per(200_000, time.Minute), throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	teams := map[string]int64{"search": 100_000, "chat": 60_000, "batch": 40_000}
	for name, perMin := range teams {
		team, err := org.NewClass(htb.Config{Name: name, Rate: throttle.Per(perMin, time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		gate, err := htb.NewLimiter(team)
		if err != nil {
			t.Fatal(err)
		}
		tr := must(httpthrottle.NewTransport(nil, httpthrottle.Shared(gate), httpthrottle.WithAccounting(llm.Config{TokenLimits: []string{name}})))
		client := openai.NewClient(
			option.WithBaseURL(vendor.URL+"/v1/"),
			option.WithAPIKey("sk-"+name),
			option.WithHTTPClient(&http.Client{Transport: tr}),
		)
		used := int64(0)
		for range 3 {
			resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:     openai.ChatModelGPT4oMini,
				Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say ok.")},
				MaxTokens: openai.Int(2000),
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			used += resp.Usage.PromptTokens + resp.Usage.CompletionTokens
		}
		if used == 0 {
			t.Fatalf("%s: the vendor reported no usage", name)
		}
		if got, want := team.Tokens(), float64(perMin-used); got != want {
			t.Errorf("%s holds %v, want its %d less the %d used: the estimates were not settled", name, got, perMin, used)
		}
	}
}
