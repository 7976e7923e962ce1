package throttle_test

import (
	"context"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

func ExampleBucket_Reserve() {
	clk := clockwork.NewFakeClock()
	b, _ := throttle.New(10, throttle.Per(10, time.Second), throttle.WithClock(clk))
	b.TryAcquire(10) // spent
	first, _ := b.Reserve(5)
	second, _ := b.Reserve(2)
	fmt.Println(first.Delay(), second.Delay())
	first.Cancel() // the work will not be done: second moves up
	fmt.Println(second.Delay(), first.OK())
	// Output:
	// 500ms 700ms
	// 200ms false
}

func ExampleWithPriority() {
	clk := clockwork.NewFakeClock()
	b, _ := throttle.New(1, throttle.Per(1, time.Second), throttle.WithClock(clk))
	b.TryAcquire(1) // the next token comes in 1s
	done := make(chan string)
	acquire := func(ctx context.Context, name string) {
		b.Acquire(ctx, 1)
		done <- name
	}
	queued := func(n int) { // until n waiters are queued: a newcomer then waits n+1 s
		for d, _ := b.WaitTime(1); d != time.Duration(n+1)*time.Second; d, _ = b.WaitTime(1) {
		}
	}
	go acquire(throttle.WithPriority(context.Background(), -1), "batch")
	queued(1)
	go acquire(throttle.WithPriority(context.Background(), 1), "interactive")
	queued(2)
	clk.Advance(time.Second)
	fmt.Println(<-done) // queued later, served first
	clk.Advance(time.Second)
	fmt.Println(<-done)
	// Output:
	// interactive
	// batch
}

func ExampleInf() {
	unlimited, _ := throttle.New(1, throttle.Inf)
	closed, _ := throttle.New(0, throttle.Per(1, time.Second))
	ok1, _ := unlimited.TryAcquire(1000)
	ok2, err := closed.TryAcquire(1)
	_, werr := closed.WaitTime(1)
	fmt.Println(ok1, ok2, err, werr)
	// Output:
	// true false <nil> throttle: cost exceeds capacity: the limit is closed (capacity 0) and admits nothing
}
