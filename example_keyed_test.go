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
