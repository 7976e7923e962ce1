package slogthrottle_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/slogthrottle"
)

// An Observer logs the grants that waited more than a second, at most
// once a minute. A fake clock stands in for the passing of time, so that
// the output is the same on every run; a program passes neither clock.
func ExampleNew() {
	ctx := context.Background()
	clock := clockwork.NewFakeClock()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // for a stable output
			}
			return a
		},
	}))
	obs := slogthrottle.New(logger, time.Minute, slogthrottle.WithClock(clock))
	tokens, err := throttle.New(1000, throttle.Per(500, time.Second),
		throttle.WithName("tokens"), throttle.WithClock(clock), throttle.WithObserver(obs))
	if err != nil {
		fmt.Println(err)
		return
	}

	// The first call spends the whole bucket without waiting; the second
	// waits two seconds for the refill.
	if err := tokens.Acquire(ctx, 1000); err != nil {
		fmt.Println(err)
	}
	done := make(chan error)
	go func() { done <- tokens.Acquire(ctx, 1000) }()
	clock.BlockUntilContext(ctx, 1)
	clock.Advance(2 * time.Second)
	if err := <-done; err != nil {
		fmt.Println(err)
	}
	// Output:
	// level=INFO msg="waited 2s for 'tokens' due to client-side throttling" limit=tokens wait=2s cost=1000
}
