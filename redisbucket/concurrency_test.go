package redisbucket_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
	"github.com/throttlekit/throttle/redisbucket/internal/redistest"
)

// hammer runs clients x goroutines deciding on one limiter, each client
// with its own connection pool as a separate process would have, for about
// d of real time, and checks that the grants never exceed capacity + rate x
// elapsed. It returns the grants and the elapsed time.
func hammer(t *testing.T, be *redistest.Backend, id string, capacity int64, rate throttle.Rate, clients, goroutines int, d time.Duration, opts ...redisbucket.Option) (int64, time.Duration) {
	t.Helper()
	var granted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients*goroutines)
	buckets := make([]*redisbucket.Bucket, clients)
	for i := range clients {
		b, err := redisbucket.New(be.Client(), id, capacity, rate,
			append([]redisbucket.Option{redisbucket.WithPrefix(be.Prefix), redisbucket.WithFailurePolicy(redisbucket.FailClosed),
				redisbucket.WithCallTimeout(5 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		buckets[i] = b
	}
	start := time.Now()
	deadline := start.Add(d)
	for _, b := range buckets {
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					var ok bool
					var err error
					if g%2 == 0 {
						ok, err = b.TryAcquire(1)
						if !ok {
							time.Sleep(200 * time.Microsecond) // a refused caller comes back soon, not in a hot loop
						}
					} else {
						ctx, cancel := context.WithDeadline(context.Background(), deadline)
						err = b.Acquire(ctx, 1)
						cancel()
						ok = err == nil
						if ctxErrIsDeadline(err) {
							err = nil
						}
					}
					if err != nil {
						errs <- err
						return
					}
					if ok {
						granted.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatalf("decision failed: %v", err)
	}
	for _, b := range buckets {
		t.Logf("stats %+v", b.Stats())
		if s := b.Stats(); s.FailureDecisions != 0 {
			t.Fatalf("failure-mode decisions: %+v", s)
		}
		b.Close()
	}
	// Tokens granted by the server within the elapsed window: at most the
	// capacity plus what refills over the window.
	bound := capacity + int64(float64(rate.Tokens())*elapsed.Seconds()/rate.Period().Seconds())
	n := granted.Load()
	t.Logf("%d clients x %d goroutines: %d grants in %v, bound %d", clients, goroutines, n, elapsed, bound)
	if n > bound {
		t.Fatalf("over-admission: %d grants > %d", n, bound)
	}
	return n, elapsed
}

func ctxErrIsDeadline(err error) bool {
	return errors.Is(err, context.DeadlineExceeded)
}
