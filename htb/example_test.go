package htb_test

import (
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/htb"
)

// An organisation's 200,000 tokens a minute shared by three teams: search
// is guaranteed half, chat 30%, batch 20%. Chat is idle, so batch borrows
// the part of chat's share that chat leaves unused, and chat still finds
// its whole guarantee when it comes back.
func ExampleNewQuota() {
	clk := clockwork.NewFakeClock()
	org, err := htb.NewQuota(200_000, throttle.Per(200_000, time.Minute),
		throttle.WithClock(clk), throttle.WithName("org TPM"))
	if err != nil {
		panic(err)
	}
	team := func(name string, perMin int64) *htb.Class {
		c, err := org.NewClass(htb.Config{Name: name, Rate: throttle.Per(perMin, time.Minute)})
		if err != nil {
			panic(err)
		}
		return c // its burst is its share of the org's: perMin here
	}
	search, chat, batch := team("search", 100_000), team("chat", 60_000), team("batch", 40_000)

	try := func(c *htb.Class, tokens int64) {
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
