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

// queued returns the number of waiters in b's queue.
func (b *Bucket) queued() int {
	g := b.lock()
	defer g.Mu.Unlock()
	n := 0
	for w := g.Head; w != nil; w = w.Next {
		n++
	}
	return n
}

// heldCount counts the keys that have a Limiter of their own.
func (k *Keyed[K]) heldCount() int {
	n := 0
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		for j := range s.ents.n {
			if s.ents.at(j).held() != nil {
				n++
			}
		}
		s.mu.Unlock()
	}
	return n
}
