package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

func Example() {
	// 10 requests a second, bursts of up to 5.
	b, err := throttle.New(5, throttle.Per(10, time.Second))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i := range 3 {
		if err := b.Acquire(ctx, 1); err != nil {
			panic(err)
		}
		fmt.Println("call", i)
	}
	// Output:
	// call 0
	// call 1
	// call 2
}

func ExampleBucket_TryAcquire() {
	// A fake clock makes time explicit: capacity 2, one token a second.
	clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b, _ := throttle.New(2, throttle.Per(1, time.Second), throttle.WithClock(clk))
	for _, at := range []time.Duration{0, 0, 0, time.Second, 3 * time.Second} {
		clk.Advance(at - clk.Since(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
		ok, _ := b.TryAcquire(1)
		fmt.Printf("t=%v %v\n", at, ok)
	}
	// Output:
	// t=0s true
	// t=0s true
	// t=0s false
	// t=1s true
	// t=3s true
}

func ExampleBucket_WaitTime() {
	clk := clockwork.NewFakeClock()
	b, _ := throttle.New(3, throttle.Per(3, time.Second), throttle.WithClock(clk))
	b.TryAcquire(3)
	// A third of a second per token, rounded up to the nanosecond.
	d, _ := b.WaitTime(1)
	fmt.Println(d)
	// Output: 333.333334ms
}

func ExampleBucket_Acquire_deadline() {
	clk := clockwork.NewFakeClock()
	b, _ := throttle.New(1, throttle.Per(1, time.Minute), throttle.WithClock(clk))
	b.TryAcquire(1)
	// The token comes in a minute; the deadline is in a second: Acquire
	// fails at once, spending nothing, and says how long it would wait.
	ctx, cancel := clockwork.WithTimeout(context.Background(), clk, time.Second)
	defer cancel()
	err := b.Acquire(ctx, 1)
	fmt.Println(err)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// throttle: would wait 1m0s, past the context deadline
	// true
}

func ExampleLimiter() {
	// An LLM provider's quota: 500 requests and 200,000 tokens a minute.
	clk := clockwork.NewFakeClock()
	rpm, _ := throttle.New(500, throttle.Per(500, time.Minute), throttle.WithName("requests"), throttle.WithClock(clk))
	tpm, _ := throttle.New(200_000, throttle.Per(200_000, time.Minute), throttle.WithName("tokens"), throttle.WithClock(clk))
	lim, _ := throttle.NewLimiter(rpm, tpm)

	// Reserve the estimate: 1 request, prompt tokens + max_tokens.
	permit, err := lim.Acquire(context.Background(), 1, 150_000)
	if err != nil {
		panic(err)
	}
	// The response reports what the call really used: settle the difference.
	permit.Settle(1, 1_200)
	fmt.Println(tpm.Tokens())
	d, _ := lim.WaitTime(1, 100_000)
	fmt.Println(d)
	// Output:
	// 198800
	// 0s
}
