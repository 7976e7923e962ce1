package redisbucket_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

func Example() {
	srv, err := miniredis.Run() // stands in for a real Redis here
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{
		Addr: srv.Addr(),
		// A limiter sits in the request path: fail in milliseconds.
		DialTimeout: 50 * time.Millisecond, ReadTimeout: 50 * time.Millisecond,
		WriteTimeout: 50 * time.Millisecond, MaxRetries: -1, DialerRetries: 1,
		ContextTimeoutEnabled: true, // each call's deadline reaches the socket
	})
	defer rdb.Close()

	// Every process that uses this id shares these 3 tokens, refilled at 1/s.
	// New fails (ErrUnavailable) when Redis does not answer.
	b, err := redisbucket.New(rdb, "vendor:key-1", 3, throttle.Per(1, time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close() // ends its subscription to the fleet's pauses
	for range 4 {
		ok, err := b.TryAcquire(1)
		fmt.Println(ok, err)
	}
	fmt.Println(b.Key())
	// Output:
	// true <nil>
	// true <nil>
	// true <nil>
	// false <nil>
	// throttle:{vendor:key-1}
}

func ExampleLimiter() {
	srv, err := miniredis.Run()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	srv.SetTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) // freeze the server's clock for the output

	lim, err := redisbucket.NewLimiter(rdb, "openai:key-1", []redisbucket.Limit{
		{Name: "requests", Capacity: 500, Rate: throttle.Per(500, time.Minute)},
		{Name: "tokens", Capacity: 200_000, Rate: throttle.Per(200_000, time.Minute)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lim.Close()
	ctx := context.Background()
	permit, err := lim.Acquire(ctx, 1, 12_000) // estimate: prompt + max_tokens
	if err != nil {
		fmt.Println(err)
		return
	}
	// ... call the API; it reports 3,000 tokens used ...
	if err := permit.Settle(1, 3_000); err != nil {
		fmt.Println(err)
	}
	levels, _ := lim.Tokens(ctx)
	// 1 request and 3,000 tokens spent, and a little more: the first call
	// from a full bucket is counted as if it reached the API up to the
	// headroom for the wire later (WithWireHeadroom, 10 ms by default),
	// which the bucket would have refilled over.
	fmt.Printf("%.2f\n", levels)
	// Output:
	// [498.92 196966.67]
}
