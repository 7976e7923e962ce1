package httpthrottle_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/htb"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
	"github.com/throttlekit/throttle/trtcm"
)

// Settling a team's LLM call against the usage the response reports, as
// with a Bucket's Permit: reserve the estimate, refund what was not used.
func ExampleParseUsage_class() {
	org, err := htb.NewQuota(200_000, throttle.Per(200_000, time.Minute))
	if err != nil {
		fmt.Println(err)
		return
	}
	search, err := org.NewClass(htb.Config{Name: "search", Rate: throttle.Per(100_000, time.Minute)})
	if err != nil {
		fmt.Println(err)
		return
	}

	body := []byte(`{"model":"gpt-4o","max_tokens":1000,"messages":[{"role":"user","content":"Say hi"}]}`)
	in, out, _ := llm.Config{}.Estimate(body)
	permit, err := search.AcquirePermit(context.Background(), in+out)
	if err != nil {
		panic(err)
	}
	// ... send the request; the response says what it used:
	usage, _ := llm.ParseUsage([]byte(`{"usage":{"prompt_tokens":9,"completion_tokens":3}}`))
	permit.Settle(usage.Input + usage.Output)
	fmt.Println("reserved", permit.Costs()[0], "used", usage.Input+usage.Output)
	// Output:
	// reserved 1008 used 12
}

// A Transport over a Marker: green requests go, yellow ones only from
// callers that accept best effort, red ones never, failing with an error
// that matches ErrYellow or ErrRed.
func ExampleNewTransport_marker() {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	// Committed 1 request a minute (burst 1), peak 2 a minute (burst 2).
	m, err := trtcm.New(throttle.Per(1, time.Minute), 1, throttle.Per(2, time.Minute), 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	tr, err := httpthrottle.NewTransport(http.DefaultTransport, httpthrottle.Shared(m))
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: tr}
	send := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		switch {
		case err == nil:
			resp.Body.Close()
			fmt.Println("sent")
		case errors.Is(err, trtcm.ErrYellow):
			fmt.Println("yellow, not sent")
		case errors.Is(err, trtcm.ErrRed):
			fmt.Println("red, not sent")
		}
	}
	send(context.Background())                        // green
	send(context.Background())                        // yellow: best effort not allowed
	send(trtcm.AllowBestEffort(context.Background())) // yellow, allowed
	send(trtcm.AllowBestEffort(context.Background())) // red
	// Output:
	// sent
	// yellow, not sent
	// sent
	// red, not sent
}
