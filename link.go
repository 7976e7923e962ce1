package throttle

import (
	"context"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle/internal/corelink"
	"github.com/throttlekit/throttle/internal/errs"
	"github.com/throttlekit/throttle/internal/exact"
	"github.com/throttlekit/throttle/internal/option"
)

// Link is the table corelink lends package httpthrottle: its fields are
// documented there.
type link = corelink.Core[*Limiter, *Bucket, Permit, Event]

func init() {
	corelink.Register(corelink.Clocker(clockOf))
	corelink.Register(&parts)
	corelink.Register(&link{
		Buckets: func(l *Limiter) []*Bucket { return l.bs },
		Take: func(ctx context.Context, l *Limiter, costs []int64) (int64, error) {
			return l.take(ctx, costs)
		},
		Now:    func(l *Limiter) int64 { return l.bs[0].g.Load().Now() },
		Ext:    func(l *Limiter) any { return l.ext },
		SetExt: func(l *Limiter, v any) { l.ext = v },
		NewPermit: func(bs []*Bucket, costs []int64, book corelink.Book[*Bucket]) Permit {
			p := newPermit(bs, costs)
			p.booked = book
			return p
		},
		Settle:       settle,
		LevelTo:      (*Bucket).levelTo,
		Give:         (*Bucket).give,
		Name:         func(b *Bucket) string { return b.name },
		Capacity:     (*Bucket).capacity,
		Paused:       (*Bucket).pausedUntil,
		Observe:      observeBucket,
		CostCount:    costCount,
		DefaultCosts: defaultCosts,
		Queued:       func(l *Limiter) int { return l.bs[0].queued() },
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

// clockOf returns the clock a Limiter's buckets sleep on, nil for another
// value. A group's clock is fixed when it is made and published through
// the atomic group pointer, so it is read without the lock.
func clockOf(g any) clockwork.Clock {
	if l, ok := g.(*Limiter); ok && len(l.bs) > 0 {
		return l.bs[0].g.Load().Timers
	}
	return nil
}

// parts is what the core lends htb and trtcm (see corelink.Parts).
var parts = corelink.Parts[Option, Rate]{
	ClockAndName: option.ClockAndName[Observer, Option],
	CostCount:    errs.CostCount,
	NoLimits:     errs.NoLimits,
	Settling:     errs.Settling,
	Shape:        Rate.shape,
	RateLess: func(a, b Rate) bool {
		return exact.RateLess(a.tokens, a.period, b.tokens, b.period)
	},
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
