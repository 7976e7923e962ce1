// Command workerpool runs a pool of errgroup workers that each wait for a
// permit before calling a rate-limited API, against a fake vendor on
// loopback (throttletest) allowing 25 requests a second with bursts of 5.
//
// 100 jobs go to 8 workers under a deadline of 3 seconds. Workers queue for
// permits in FIFO order, so the calls go out at the quota's pace and none
// is refused (the workers' burst is one below the vendor's, for the jitter
// of the network); a job whose permit would come after the deadline fails at
// once with a *throttle.WaitError (errors.Is context.DeadlineExceeded)
// instead of waiting in vain, and is counted as skipped.
//
//	go run ./examples/workerpool
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/throttletest"
)

const (
	jobs     = 100
	workers  = 8
	deadline = 3 * time.Second
)

func main() {
	vendor := throttletest.NewServer(throttletest.Config{Requests: throttle.Per(25, time.Second), RequestBurst: 5})
	defer vendor.Close()
	fmt.Printf("fake vendor at %s: 25 requests/s, bursts of 5\n", vendor.URL)
	fmt.Printf("%d jobs, %d workers, deadline %v\n\n", jobs, workers, deadline)

	// A burst one below the vendor's: requests reach the vendor a little
	// after their permits, unevenly, and the spare token absorbs that.
	bucket, err := throttle.New(4, throttle.Per(25, time.Second), throttle.WithName("requests"))
	if err != nil {
		panic(err)
	}
	limiter, err := throttle.NewLimiter(bucket)
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)

	start := time.Now()
	var mu sync.Mutex
	perSecond := map[int]int{}
	statuses := map[int]int{}
	skipped := 0
	for job := range jobs {
		g.Go(func() error {
			// Wait for a permit: FIFO among the workers, failing at once
			// if it cannot come before the deadline.
			if _, err := limiter.Acquire(ctx, 1); err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					mu.Lock()
					skipped++
					mu.Unlock()
					return nil
				}
				return err
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/v1/jobs/%d", vendor.URL, job), nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("job %d: %w", job, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			statuses[resp.StatusCode]++
			perSecond[int(time.Since(start)/time.Second)]++
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		fmt.Println("error:", err)
	}
	took := time.Since(start)

	for s := 0; s < len(perSecond); s++ {
		fmt.Printf("second %d: %2d calls\n", s, perSecond[s])
	}
	fmt.Printf("\n%d calls answered 200, %d refused with 429, %d jobs skipped at once for the deadline, in %v\n",
		statuses[http.StatusOK], statuses[http.StatusTooManyRequests], skipped, took.Round(time.Millisecond))
}
