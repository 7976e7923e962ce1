package llm_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
)

// TestOutputsLearned: with Outputs, a call reserves the 95th percentile of
// the outputs its model's calls reported once 32 have, not its
// max_tokens; until then, for another model, and above a smaller
// max_tokens, it reserves max_tokens.
func TestOutputsLearned(t *testing.T) {
	var written int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		written++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"usage":{"prompt_tokens":10,"completion_tokens":%d}}`, written)
	}))
	defer srv.Close()
	fc := clockwork.NewFakeClockAt(epoch)
	big := throttle.Per(1<<40, time.Minute)
	l := must(throttle.NewLimiter(
		must(throttle.New(1<<40, big, throttle.WithClock(fc), throttle.WithName("requests"))),
		must(throttle.New(1<<40, big, throttle.WithClock(fc), throttle.WithName("tokens")))))
	cfg := llm.Config{Outputs: llm.NewOutputs()}
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithAccounting(cfg)))
	body := func(model string, maxTokens int) string {
		return fmt.Sprintf(`{"model":%q,"max_tokens":%d,"messages":[{"role":"user","content":"hello there"}]}`, model, maxTokens)
	}
	in, _, _ := llm.Config{}.Estimate([]byte(body("m", 1000)))
	reserved := func(b string) int64 {
		t.Helper()
		costs, err := cfg.Cost(post(t, srv.URL, b), l)
		if err != nil {
			t.Fatal(err)
		}
		return costs[1] - in
	}
	call := func() {
		t.Helper()
		resp, err := tr.RoundTrip(post(t, srv.URL, body("m", 1000)))
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	for range 31 {
		call()
	}
	if got := reserved(body("m", 1000)); got != 1000 {
		t.Fatalf("after 31 calls: output reserved %d, want max_tokens 1000", got)
	}
	for range 9 {
		call()
	}
	// Outputs 1 to 40: the 95th percentile is the 38th.
	if got := reserved(body("m", 1000)); got != 38 {
		t.Errorf("after 40 calls writing 1 to 40: output reserved %d, want 38", got)
	}
	if got := reserved(body("m", 20)); got != 20 {
		t.Errorf("max_tokens 20: output reserved %d, want 20", got)
	}
	if got := reserved(body("other", 1000)); got != 1000 {
		t.Errorf("another model: output reserved %d, want max_tokens 1000", got)
	}
}

// TestOutputsNotLearnedFromCutStreams: a stream the caller closes before
// its end teaches nothing, though it is settled from what was read.
func TestOutputsNotLearnedFromCutStreams(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, strings.Repeat("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n", 1000))
	}))
	defer srv.Close()
	fc := clockwork.NewFakeClockAt(epoch)
	big := throttle.Per(1<<40, time.Minute)
	l := must(throttle.NewLimiter(must(throttle.New(1<<40, big, throttle.WithClock(fc), throttle.WithName("tokens")))))
	cfg := llm.Config{Outputs: llm.NewOutputs()}
	tr := must(httpthrottle.NewTransport(newBase(t), httpthrottle.Shared(l), httpthrottle.WithAccounting(cfg)))
	b := `{"model":"m","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for range 40 {
		resp, err := tr.RoundTrip(post(t, srv.URL, b))
		if err != nil {
			t.Fatal(err)
		}
		// Past the usage event, short of the end.
		if _, err := io.ReadFull(resp.Body, make([]byte, 200)); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	in, _, _ := llm.Config{}.Estimate([]byte(b))
	costs, err := cfg.Cost(post(t, srv.URL, b), l)
	if err != nil {
		t.Fatal(err)
	}
	if got := costs[0] - in; got != 1000 {
		t.Errorf("after 40 streams cut short: output reserved %d, want max_tokens 1000", got)
	}
}
