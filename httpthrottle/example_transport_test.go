package httpthrottle_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/throttletest"
)

// An http.Client kept under a vendor's quota of 50 requests a second with
// bursts of 5: the Transport waits for a permit before each request, so
// none is refused.
func ExampleNewTransport() {
	vendor := throttletest.NewServer(throttletest.Config{Requests: throttle.Per(50, time.Second), RequestBurst: 5})
	defer vendor.Close()

	bucket, err := throttle.New(5, throttle.Per(50, time.Second), throttle.WithName("requests"))
	if err != nil {
		fmt.Println(err)
		return
	}
	limiter, err := throttle.NewLimiter(bucket)
	if err != nil {
		fmt.Println(err)
		return
	}
	tr, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(limiter))
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: tr}

	statuses := map[int]int{}
	for range 12 {
		resp, err := client.Get(vendor.URL + "/v1/items")
		if err != nil {
			fmt.Println(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses[resp.StatusCode]++
	}
	fmt.Println("200:", statuses[200], "429:", statuses[429])
	// Output: 200: 12 429: 0
}

// A server enforcing a quota of 2 requests, refilled at one a minute: the
// third request is refused with the exact wait, and every answer carries
// the IETF RateLimit fields.
func ExampleHandler() {
	bucket, err := throttle.New(2, throttle.Per(1, time.Minute))
	if err != nil {
		fmt.Println(err)
		return
	}
	limiter, err := throttle.NewLimiter(bucket)
	if err != nil {
		fmt.Println(err)
		return
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	h := httpthrottle.Handler(api, httpthrottle.Shared(limiter))

	for range 3 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		fmt.Printf("%d RateLimit: %s Retry-After: %q\n", w.Code, w.Header().Get("RateLimit"), w.Header().Get("Retry-After"))
	}
	// Output:
	// 200 RateLimit: "default";r=1;t=60 Retry-After: ""
	// 200 RateLimit: "default";r=0;t=120 Retry-After: ""
	// 429 RateLimit: "default";r=0;t=120 Retry-After: "60"
}

// An LLM call reserves its estimated tokens (prompt characters / 4 plus
// max_tokens) and is settled to the usage the response reports.
func ExampleWithAccounting() {
	vendor := throttletest.NewServer(throttletest.Config{
		Requests: throttle.Per(100, time.Minute), Tokens: throttle.Per(100_000, time.Minute), ReplyTokens: 12,
	})
	defer vendor.Close()

	// The LLM config names each limit's role; these are its defaults.
	requests, err := throttle.New(100, throttle.Per(100, 24*time.Hour), throttle.WithName("requests"))
	if err != nil {
		fmt.Println(err)
		return
	}
	tokens, err := throttle.New(10_000, throttle.Per(10_000, 24*time.Hour), throttle.WithName("tokens"))
	if err != nil {
		fmt.Println(err)
		return
	}
	limiter, err := throttle.NewLimiter(requests, tokens)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := llm.Config{RequestLimits: []string{"requests"}, TokenLimits: []string{"tokens"}}
	tr, err := httpthrottle.NewTransport(nil, httpthrottle.Shared(limiter), httpthrottle.WithAccounting(cfg))
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: tr}

	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Name three rivers."}],"max_tokens":500}`
	req, err := http.NewRequest(http.MethodPost, vendor.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	req.Header.Set("Authorization", "Bearer sk-example")
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	reply, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	usage, _ := llm.ParseUsage(reply)
	fmt.Printf("used %d+%d tokens; %d of 10000 left\n", usage.Input, usage.Output, int64(tokens.Status().Level))
	// Output: used 10+12 tokens; 9978 of 10000 left
}
