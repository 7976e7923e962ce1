package throttle

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRealClockTimers runs the real clock's waiter timers against
// everything that races with them, for 300 ms: every waiter's own timer
// armed as it queues (group.ahead, the real clock only), waiters granted by
// another's wake-up, waiters cancelled as their timers fire, and a rate
// changed to and fro, which re-times the queue earlier and later and leaves
// stale ticks in reused waiters. Run with -race, it checks that nothing
// touches a waiter once reused; on any run, that every call returns and
// that no more is granted than the faster rate allows.
func TestRealClockTimers(t *testing.T) {
	const fast, slow = 4000, 1000 // per second
	b, err := New(1, Per(fast, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	b.TryAcquire(1)
	ctx, stop := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer stop()
	var (
		grants atomic.Int64
		wg     sync.WaitGroup
	)
	begin := time.Now()
	for i := range 64 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 1))
			for ctx.Err() == nil {
				c, cancel := context.WithTimeout(ctx, time.Duration(r.IntN(20))*time.Millisecond)
				if b.Acquire(c, 1) == nil {
					grants.Add(1)
				}
				cancel()
			}
		})
	}
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			rate := Per(fast, time.Second)
			if i%2 == 1 {
				rate = Per(slow, time.Second)
			}
			if err := b.SetRate(rate); err != nil {
				t.Error(err)
			}
			tm := time.NewTimer(5 * time.Millisecond)
			select {
			case <-tm.C:
			case <-ctx.Done():
				tm.Stop()
			}
		}
	})
	wg.Wait()
	elapsed := time.Since(begin)
	// At most the fast rate over the whole run, plus the capacity.
	if limit := int64(elapsed.Seconds()*fast) + 1; grants.Load() > limit {
		t.Fatalf("%d grants in %v: more than %d", grants.Load(), elapsed, limit)
	}
	if grants.Load() == 0 {
		t.Fatal("nothing granted")
	}
	t.Logf("%d grants in %v", grants.Load(), elapsed)
}
