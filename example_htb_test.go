package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// An organisation's 200,000 tokens a minute shared by three teams: search
// is guaranteed half, chat 30%, batch 20%. Chat is idle, so batch borrows
// the part of chat's share that chat leaves unused, and chat still finds
// its whole guarantee when it comes back.
func ExampleNewQuota() {
	clk := clockwork.NewFakeClock()
	org, _ := throttle.NewQuota(200_000, throttle.Per(200_000, time.Minute),
		throttle.WithClock(clk), throttle.WithName("org TPM"))
	team := func(name string, perMin int64) *throttle.Class {
		c, err := org.NewClass(throttle.ClassConfig{Name: name, Rate: throttle.Per(perMin, time.Minute)})
		if err != nil {
			panic(err)
		}
		return c // its burst is its share of the org's: perMin here
	}
	search, chat, batch := team("search", 100_000), team("chat", 60_000), team("batch", 40_000)

	try := func(c *throttle.Class, tokens int64) {
		ok, _ := c.TryAcquire(tokens)
		fmt.Printf("%-6s %6d %v\n", c.Name(), tokens, ok)
	}
	try(search, 100_000) // each team's own guarantee
	try(batch, 40_000)
	try(batch, 1) // the org holds chat's 60,000 for chat

	clk.Advance(30 * time.Second)
	try(search, 50_000) // 30 s of search's guarantee
	try(batch, 20_000)  // 30 s of batch's
	try(batch, 30_000)  // borrowed: the 30 s of chat's share chat did not use
	try(batch, 1)
	try(chat, 60_000) // chat's guarantee was never lent
	// Output:
	// search 100000 true
	// batch   40000 true
	// batch       1 false
	// search  50000 true
	// batch   20000 true
	// batch   30000 true
	// batch       1 false
	// chat    60000 true
}

// Settling a team's LLM call against the usage the response reports, as
// with a Bucket's Permit: reserve the estimate, refund what was not used.
func ExampleClass_AcquirePermit() {
	org, _ := throttle.NewQuota(200_000, throttle.Per(200_000, time.Minute))
	search, _ := org.NewClass(throttle.ClassConfig{Name: "search", Rate: throttle.Per(100_000, time.Minute)})

	body := []byte(`{"model":"gpt-4o","max_tokens":1000,"messages":[{"role":"user","content":"Say hi"}]}`)
	in, out, _ := throttle.LLM{}.Estimate(body)
	permit, err := search.AcquirePermit(context.Background(), in+out)
	if err != nil {
		panic(err)
	}
	// ... send the request; the response says what it used:
	usage, _ := throttle.ParseUsage([]byte(`{"usage":{"prompt_tokens":9,"completion_tokens":3}}`))
	permit.Settle(usage.Input + usage.Output)
	fmt.Println("reserved", permit.Costs()[0], "used", usage.Input+usage.Output)
	// Output:
	// reserved 1008 used 12
}

// A Transport over a Marker: green requests go, yellow ones only from
// callers that accept best effort, red ones never, failing with an error
// that matches ErrYellow or ErrRed.
func ExampleMarker_transport() {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	// Committed 1 request a minute (burst 1), peak 2 a minute (burst 2).
	m, _ := throttle.NewMarker(throttle.Per(1, time.Minute), 1, throttle.Per(2, time.Minute), 2)
	client := &http.Client{Transport: throttle.NewTransport(http.DefaultTransport, throttle.Shared(m))}
	send := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		switch {
		case err == nil:
			resp.Body.Close()
			fmt.Println("sent")
		case errors.Is(err, throttle.ErrYellow):
			fmt.Println("yellow, not sent")
		case errors.Is(err, throttle.ErrRed):
			fmt.Println("red, not sent")
		}
	}
	send(context.Background())                           // green
	send(context.Background())                           // yellow: best effort not allowed
	send(throttle.AllowBestEffort(context.Background())) // yellow, allowed
	send(throttle.AllowBestEffort(context.Background())) // red
	// Output:
	// sent
	// yellow, not sent
	// sent
	// red, not sent
}
