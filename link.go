package throttle

import (
	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle/internal/corelink"
)

// Link is the table corelink lends package httpthrottle: its fields are
// documented there.
type link = corelink.Core[*Limiter, *Bucket, Permit, Event]

func init() {
	corelink.Register(&link{
		Queued: func(l *Limiter) int { return l.bs[0].queued() },
		HeldKeys: func(v any) int {
			if k, ok := v.(interface{ heldCount() int }); ok {
				return k.heldCount()
			}
			return 0
		},
		Keyed: func(v any) any {
			if k, ok := v.(interface{ admitter() any }); ok {
				return k.admitter()
			}
			return nil
		},
	})
}

// clockOf returns the clock l's buckets sleep on, nil for the zero
// Limiter. A group's clock is fixed when it is made and published through
// the atomic group pointer, so it is read without the lock.
func clockOf(l *Limiter) clockwork.Clock {
	if len(l.bs) == 0 {
		return nil
	}
	return l.bs[0].g.Load().Timers
}

// observeBucket reports e to b's observer, if it has one.
func observeBucket(b *Bucket, e Event) bool {
	if b.obs == nil {
		return false
	}
	b.obs.Observe(e)
	return true
}

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
