package tiktoken_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/throttletest"
)

// TestDenseTextStreams: 30 concurrent streamed calls whose prompts are
// Chinese text, which the vendor counts exactly (about 0.8 token a
// character). Counted as 4 characters a token, each call reserves far less
// than it uses: the calls of the first wave are refused and retried, and
// once streams are settled from their usage the debt is charged to the
// limiter and the calls that follow wait for it. It logs how many calls the
// vendor refused with that count, with the default estimate and with the
// exact tokenizer; none fails. Real clock: about 7 s.
func TestDenseTextStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("real-clock test of about 7 s")
	}
	enc, _ := encodings(t)
	prompt := strings.Repeat("速率限制保护服务免受突发流量的影响，遵守限制的客户端收到的拒绝更少。", 6)
	body := `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"max_tokens":50,"messages":[{"role":"user","content":"` + prompt + `"}]}`
	for _, tt := range []struct {
		name string
		c    llm.Config
	}{{"chars/4", llm.Config{CharsPerToken: 4}}, {"default", llm.Config{}}, {"exact", llm.Config{Tokenizer: enc}}} {
		t.Run(tt.name, func(t *testing.T) {
			const rate = 2000 // tokens a second, and the burst
			vendor := throttletest.NewServer(throttletest.Config{
				Tokens: throttle.Per(rate, time.Second), Requests: throttle.Per(1000, time.Second),
				Tokenizer: enc, Dialect: throttletest.OpenAI, ReplyTokens: 50,
			})
			defer vendor.Close()
			rpm, _ := throttle.New(1000, throttle.Per(1000, time.Second), throttle.WithName("requests"))
			tpm, _ := throttle.New(rate, throttle.Per(rate, time.Second), throttle.WithName("tokens"))
			lim, _ := throttle.NewLimiter(rpm, tpm)
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			tr := must(httpthrottle.NewTransport(base, httpthrottle.Shared(lim), httpthrottle.WithAccounting(tt.c)))
			var failed atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for range 30 {
				wg.Go(func() {
					req, _ := http.NewRequest(http.MethodPost, vendor.URL+"/v1/chat/completions", strings.NewReader(body))
					resp, err := tr.RoundTrip(req)
					if err != nil {
						failed.Add(1)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						failed.Add(1)
					}
				})
			}
			wg.Wait()
			st := vendor.Stats()
			t.Logf("%s: 30 streams in %v, %d failed; vendor: %d requests, %d refused with 429, %d tokens a call; transport %+v",
				tt.name, time.Since(start).Round(time.Millisecond), failed.Load(), st.Requests, st.Throttled, st.Tokens/30, tr.Stats())
			if failed.Load() != 0 {
				t.Errorf("%d calls failed", failed.Load())
			}
		})
	}
}
