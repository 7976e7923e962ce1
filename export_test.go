package throttle

import (
	"runtime"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// waitQueued yields until b's queue holds n waiters. Queueing happens in
// other goroutines with no observable event on the fake clock except for
// the head, so the test yields the processor rather than sleeping.
func waitQueued(t testing.TB, b *Bucket, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.queued() != n {
		if time.Now().After(deadline) {
			t.Fatalf("queue holds %d waiters, want %d", b.queued(), n)
		}
		runtime.Gosched()
	}
}

func newClock() *clockwork.FakeClock { return clockwork.NewFakeClockAt(t0) }

// QueuedFor returns the number of waiters queued on l's buckets, for the
// tests of package throttle_test that drive a fake clock and need to know
// when every goroutine has either finished or queued.
func QueuedFor(l *Limiter) int { return l.bs[0].queued() }
