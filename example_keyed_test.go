package throttle_test

import (
	"fmt"
	"time"

	"github.com/throttlekit/throttle"
)

// A Keyed limiter gives each API key its own budget: here 2 requests a
// second for free keys and 100 for the others. Keys are made on first use
// and dropped again once idle and full, so the limiter's memory follows the
// keys in use, not every key ever seen.
func ExampleKeyed() {
	free := []throttle.Limit{{Name: "requests", Capacity: 2, Rate: throttle.Per(2, time.Second)}}
	paid := []throttle.Limit{{Name: "requests", Capacity: 100, Rate: throttle.Per(100, time.Second)}}
	limits := throttle.NewKeyed(func(apiKey string) []throttle.Limit {
		if len(apiKey) > 5 && apiKey[:5] == "free-" {
			return free
		}
		return paid
	})
	for range 3 {
		ok, _ := limits.TryAcquire("free-alice", 1)
		fmt.Print(ok, " ")
	}
	ok, _ := limits.TryAcquire("bob", 1)
	fmt.Println(ok, limits.Len())
	// Output: true true false true 2
}

// A key's Gate serves code written for any Gate, here a check of what is
// left before a call, while the key stays a compact record: its Status is
// read, and its costs taken, without making the key a Limiter.
func ExampleKeyed_Gate() {
	perTenant := throttle.NewKeyed(func(string) []throttle.Limit {
		return []throttle.Limit{{Name: "requests", Capacity: 10, Rate: throttle.Per(10, time.Minute)}}
	})
	g := perTenant.Gate("acme")
	ok, _ := g.(throttle.Taker).TryAcquire(3)
	st := g.(throttle.Meter).Status(nil)
	fmt.Println(ok, st[0].Name, st[0].Remaining, "of", st[0].Capacity, g == perTenant.Gate("acme"))
	// Output: true requests 7 of 10 true
}
