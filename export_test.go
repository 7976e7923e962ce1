package throttle

import (
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// queued returns the number of waiters in b's queue.
func (b *Bucket) queued() int {
	g := b.lock()
	defer g.mu.Unlock()
	n := 0
	for w := g.head; w != nil; w = w.next {
		n++
	}
	return n
}

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

// limiterOf is Limiter as the Limiter it is, for the tests that look
// inside the learned buckets.
func (a *AutoLimiter) limiterOf(r *http.Request) (*Limiter, error) {
	g, err := a.Limiter(r)
	_, l := gateOf(g)
	return l, err
}
