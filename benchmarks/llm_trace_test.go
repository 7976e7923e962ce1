package benchmarks

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
)

// The LLM trace of issue 39: calls of about 1,000 input tokens with
// max_tokens 4,096 that write a lognormal output of median 300 (sigma
// llmTraceSigma) over 20 s each, against one key bound by its tokens per
// minute, at llmTraceDemand times what that TPM serves.
const (
	llmTraceTPM       = 200_000
	llmTraceMaxTokens = 4096
	llmTraceMedian    = 300
	llmTraceSigma     = 0.5
	llmTraceDemand    = 1.2
	llmTraceCall      = time.Minute / 3 // 20 s, scaled
)

// llmTraceVendor is a loopback OpenAI-like key that counts tokens as they
// are used: a call's input when it arrives, refused with 429 when the
// bucket of a minute's tokens (refilled continuously) holds less; its
// output when it ends, which may leave the bucket in debt. Every answer
// carries x-ratelimit-*-tokens. The input and the output to write come in
// X-Input and X-Output.
type llmTraceVendor struct {
	minute time.Duration
	call   time.Duration

	mu    sync.Mutex
	level float64
	at    time.Time

	attempts, refused, served, tokens atomic.Int64
}

func (v *llmTraceVendor) take(n float64) (ok bool, level float64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := time.Now()
	v.level = min(llmTraceTPM, v.level+float64(now.Sub(v.at))/float64(v.minute)*llmTraceTPM)
	v.at = now
	if n > 0 && v.level < n {
		return false, v.level
	}
	v.level -= n
	return true, v.level
}

func (v *llmTraceVendor) headers(w http.ResponseWriter, level float64) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Ratelimit-Limit-Tokens", strconv.Itoa(llmTraceTPM))
	h.Set("X-Ratelimit-Remaining-Tokens", strconv.FormatInt(int64(max(level, 0)), 10))
	h.Set("X-Ratelimit-Reset-Tokens", resetOf(llmTraceTPM-level, llmTraceTPM, v.minute))
}

func (v *llmTraceVendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	v.attempts.Add(1)
	in, _ := strconv.ParseInt(r.Header.Get("X-Input"), 10, 64)
	out, _ := strconv.ParseInt(r.Header.Get("X-Output"), 10, 64)
	ok, level := v.take(float64(in))
	if !ok {
		v.refused.Add(1)
		v.headers(w, level)
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"Rate limit reached for tokens","type":"tokens","code":"rate_limit_exceeded"}}`)
		return
	}
	select {
	case <-time.After(v.call): // the call writes its output
	case <-r.Context().Done():
		return
	}
	_, level = v.take(float64(out))
	v.served.Add(1)
	v.tokens.Add(in + out)
	v.headers(w, level)
	fmt.Fprintf(w, `{"usage":{"prompt_tokens":%d,"completion_tokens":%d}}`, in, out)
}

// llmTraceResult is one run of the trace.
type llmTraceResult struct {
	name                      string
	served, shed, failed      int64
	attempts, refused, tokens int64
	minutes                   float64
	used                      float64 // of the TPM over the run
}

func (r llmTraceResult) String() string {
	return fmt.Sprintf("%-26s TPM used %6.2f%%  served %5d  shed %4d  failed %3d  attempts %5d  429s %4d (%.3f%%)",
		r.name, 100*r.used, r.served, r.shed, r.failed, r.attempts, r.refused, 100*float64(r.refused)/float64(max(r.attempts, 1)))
}

// llmPrompt returns a chat body whose estimated input is about 1,000
// tokens, and that estimate.
func llmPrompt() (body string, in int64) {
	words := strings.Repeat("the quick brown fox jumps over the lazy dog ", 110)
	body = fmt.Sprintf(`{"model":"gpt-x","max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, llmTraceMaxTokens, words)
	in, _, _ = llm.Config{}.Estimate([]byte(body))
	return body, in
}

// runLLMTrace sends the trace for minutes scaled minutes of minute each
// through a Transport with cfg over a Limiter of the key's TPM, and
// reports the share of the TPM the vendor served over the run (its
// initial minute's fill plus its refill until the last answer).
func runLLMTrace(t *testing.T, name string, minute time.Duration, minutes int, cfg llm.Config) llmTraceResult {
	v := &llmTraceVendor{minute: minute, call: llmTraceCall * minute / time.Minute, level: llmTraceTPM, at: time.Now()}
	srv := httptest.NewServer(v)
	defer srv.Close()
	tok := must(throttle.New(llmTraceTPM, throttle.Per(llmTraceTPM, minute), throttle.WithName("tokens")))
	lim := must(throttle.NewLimiter(tok))
	base := &http.Transport{MaxIdleConnsPerHost: 1024}
	defer base.CloseIdleConnections()
	tr := must(httpthrottle.NewTransport(base, httpthrottle.Shared(lim), httpthrottle.WithAccounting(cfg)))
	client := &http.Client{Transport: tr}

	body, in := llmPrompt()
	mean := float64(in) + llmTraceMedian*math.Exp(llmTraceSigma*llmTraceSigma/2)
	perMinute := llmTraceDemand * llmTraceTPM / mean
	interval := time.Duration(float64(minute) / perMinute)
	n := int(perMinute * float64(minutes))
	rng := rand.New(rand.NewPCG(39, 1))
	r := llmTraceResult{name: name}
	var shed, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	next := start
	for range n {
		out := min(int64(llmTraceMedian*math.Exp(llmTraceSigma*rng.NormFloat64())), llmTraceMaxTokens)
		time.Sleep(time.Until(next))
		next = next.Add(interval)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), minute+v.call)
			defer cancel()
			req := must(http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body)))
			req.Header.Set("X-Input", strconv.FormatInt(in, 10))
			req.Header.Set("X-Output", strconv.FormatInt(out, 10))
			resp, err := client.Do(req)
			if err != nil {
				shed.Add(1)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	r.minutes = float64(time.Since(start)) / float64(minute)
	r.served, r.shed, r.failed = v.served.Load(), shed.Load(), failed.Load()
	r.attempts, r.refused, r.tokens = v.attempts.Load(), v.refused.Load(), v.tokens.Load()
	r.used = float64(r.tokens) / (llmTraceTPM * (1 + r.minutes))
	return r
}

// TestLLMTrace is issue 39's LLM trace goal: the share of a TPM-bound
// key's tokens used, and the 429s, reserving each call's max_tokens and
// reserving what calls of its model used (llm.Outputs).
// THROTTLE_LLM_TRACE=1 runs it, for THROTTLE_POOL_MINUTES (10) scaled
// minutes of THROTTLE_POOL_MINUTE (3s) each.
func TestLLMTrace(t *testing.T) {
	if os.Getenv("THROTTLE_LLM_TRACE") == "" {
		t.Skip("THROTTLE_LLM_TRACE=1 runs the real-time trace")
	}
	minute := poolFirstGoal(t, 0).minute
	t.Log(runLLMTrace(t, "max_tokens reserved", minute, poolMinutes(), llm.Config{}))
	t.Log(runLLMTrace(t, "learned outputs reserved", minute, poolMinutes(), llm.Config{Outputs: llm.NewOutputs()}))
}
