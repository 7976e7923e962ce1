package throttletest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/throttletest"
)

// A fake vendor on a fake clock: a plain client is refused once its key's
// burst is spent, and a client whose Transport holds the same quota waits
// for it instead, in fake time.
func Example() {
	clk := clockwork.NewFakeClockAt(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	vendor := throttletest.NewServer(throttletest.Config{
		Requests: throttle.Per(2, time.Second), // per API key, bursts of 2
		Tokens:   throttle.Per(10_000, time.Minute),
		Dialect:  throttletest.OpenAI,
		Clock:    clk,
	})
	defer vendor.Close()

	chat := func(client *http.Client, key string) {
		req, err := http.NewRequest(http.MethodPost, vendor.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-test","messages":[{"role":"user","content":"Hello, vendor."}],"max_tokens":50}`))
		if err != nil {
			panic(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if u, ok := llm.ParseUsage(body); ok && resp.StatusCode == http.StatusOK {
			fmt.Printf("%s: 200, %d+%d tokens\n", key, u.Input, u.Output)
		} else {
			fmt.Printf("%s: %d, Retry-After %s\n", key, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}

	plain := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for range 3 {
		chat(plain, "sk-plain")
	}

	requests, err := throttle.New(2, throttle.Per(2, time.Second), throttle.WithClock(clk), throttle.WithName("requests"))
	if err != nil {
		panic(err)
	}
	lim, err := throttle.NewLimiter(requests)
	if err != nil {
		panic(err)
	}
	tr, err := httpthrottle.NewTransport(&http.Transport{DisableKeepAlives: true}, httpthrottle.Shared(lim))
	if err != nil {
		panic(err)
	}
	throttled := &http.Client{Transport: tr}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 3 {
			chat(throttled, "sk-throttled")
		}
	}()
	// The third call waits for a token: its timer is armed on the fake
	// clock. Half a second later the token is there.
	if err := clk.BlockUntilContext(context.Background(), 1); err != nil {
		panic(err)
	}
	clk.Advance(500 * time.Millisecond)
	<-done

	st := vendor.Stats()
	fmt.Printf("vendor: %d requests, %d admitted, %d answered 429, %d tokens\n",
		st.Requests, st.Admitted, st.Throttled, st.Tokens)
	// Output:
	// sk-plain: 200, 10+16 tokens
	// sk-plain: 200, 10+16 tokens
	// sk-plain: 429, Retry-After 1
	// sk-throttled: 200, 10+16 tokens
	// sk-throttled: 200, 10+16 tokens
	// sk-throttled: 200, 10+16 tokens
	// vendor: 6 requests, 5 admitted, 1 answered 429, 130 tokens
}
