package throttle_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// The program of README.md: its func main is this example's body, and its
// output is this example's (TestMarkdownReadmeProgram checks both).
func Example_readme() {
	// A fake clock makes this run instant and its output exact. In your
	// program, leave out clk, WithClock and the goroutine that moves clk
	// on: the bucket then runs on real time.
	clk := clockwork.NewFakeClock()
	start := clk.Now()

	// Bursts of 3, then 2 calls a second.
	b, err := throttle.New(3, throttle.Per(2, time.Second), throttle.WithClock(clk))
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // time passes: while a call waits, move the fake clock on
		for clk.BlockUntilContext(ctx, 1) == nil {
			clk.Advance(100 * time.Millisecond)
		}
	}()

	for job := range 6 {
		if err := b.Acquire(ctx, 1); err != nil { // waits its turn, FIFO
			panic(err)
		}
		fmt.Printf("job %d at %v\n", job, clk.Since(start)) // call the API here
	}

	ok, _ := b.TryAcquire(1) // never waits
	wait, _ := b.WaitTime(1) // how long until a token is there
	fmt.Printf("a 7th job now: %v; a token in %v\n", ok, wait)
	// Output:
	// job 0 at 0s
	// job 1 at 0s
	// job 2 at 0s
	// job 3 at 500ms
	// job 4 at 1s
	// job 5 at 1.5s
	// a 7th job now: false; a token in 500ms
}
