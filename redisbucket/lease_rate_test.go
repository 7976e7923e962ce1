package redisbucket_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
	"github.com/throttlekit/throttle/redisbucket/internal/redistest"
)

const leaseRate = 500

// Lease mode delivers at least 95% of the rate to one process whatever
// its concurrency (1, 8, 64 goroutines calling Acquire in a loop, or
// TryAcquire and a 1 ms pause after a refusal), and
// never more than capacity + rate x (window + Hold) in any window. Real
// server, real time, 2 s per case: long enough that a scheduling stall of
// the machine (CI runs other packages' tests beside this one) is not a
// twentieth of the run; 3 attempts a case, for a machine under load.
func TestLeaseDeliversTheRate(t *testing.T) {
	be := redistest.New(t)
	if be.Mini != nil {
		t.Skip("real time at 500/s: needs a real server")
	}
	for _, try := range []bool{false, true} {
		for _, g := range []int{1, 8, 64} {
			call := "Acquire"
			if try {
				call = "TryAcquire"
			}
			t.Run(fmt.Sprintf("%s/goroutines=%d", call, g), func(t *testing.T) {
				// A machine under load stalls this process or the server
				// now and then (at a load average of 8-16 on 2 cores, 1 or
				// 2 of the 6 cases fell to 70-94% in a run, never the same
				// one twice): a case has 3 attempts to deliver 95% of the
				// rate. Over-admission fails any attempt.
				for attempt := 1; ; attempt++ {
					delivered := leaseRun(t, be, call, g, attempt, try)
					if delivered >= 0.95*leaseRate {
						return
					}
					if attempt == 3 {
						t.Errorf("delivered %.0f/s in the last of %d attempts, want at least 95%% of %d/s", delivered, attempt, leaseRate)
						return
					}
				}
			})
		}
	}
}

// leaseRun is one attempt of TestLeaseDeliversTheRate: it returns the rate
// delivered beyond the burst.
func leaseRun(t *testing.T, be *redistest.Backend, call string, g, attempt int, try bool) float64 {
	const capacity, rate, hold = 50, leaseRate, time.Second
	const run = 2 * time.Second
	c := redis.NewClient(&redis.Options{Addr: be.Addr, DisableIdentity: true, ContextTimeoutEnabled: true})
	defer c.Close()
	b, err := redisbucket.New(c, fmt.Sprintf("lrate%s%d-%d", call, g, attempt), capacity, throttle.Per(rate, time.Second), redisbucket.WithPrefix(be.Prefix),
		redisbucket.WithFailurePolicy(redisbucket.FailClosed), redisbucket.WithCallTimeout(time.Second),
		redisbucket.WithLease(redisbucket.Lease{Hold: hold}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	start := time.Now()
	var mu sync.Mutex
	var grants []time.Duration
	var wg sync.WaitGroup
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if try {
					if ok, err := b.TryAcquire(1); err != nil {
						t.Error(err)
						return
					} else if !ok {
						time.Sleep(time.Millisecond)
						continue
					}
				} else if b.Acquire(ctx, 1) != nil {
					return
				}
				at := time.Since(start)
				if at >= run {
					return
				}
				mu.Lock()
				grants = append(grants, at)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(grants)
	// The first capacity tokens are the initial burst; the rest
	// is what refill delivered, over the run: grants after it
	// are not counted, however long the goroutines take to stop.
	delivered := float64(len(grants)-capacity) / run.Seconds()
	worst := 0.0
	for _, win := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		j := 0
		for i := range grants {
			for grants[i]-grants[j] >= win {
				j++
			}
			worst = max(worst, float64(i-j+1)-(capacity+rate*(win+hold).Seconds()))
		}
	}
	s := b.Stats()
	t.Logf("%s, %d goroutines: %d grants in %v, %.0f/s delivered beyond the burst (%.1f%% of %d/s); %d calls, %d served from leases; worst window excess %.0f",
		call, g, len(grants), elapsed.Round(time.Millisecond), delivered, 100*delivered/rate, rate, s.Calls, s.LeaseServed, worst)
	if worst > 0 {
		t.Errorf("over-admission: a window exceeded capacity + rate x (window + Hold) by %.0f", worst)
	}
	return delivered
}
