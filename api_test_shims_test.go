package throttle

import (
	"context"
	"time"
)

// The package's own tests reach a bucket's state and its advanced
// operations directly, as the methods below; users reach the same through
// Status and a Limiter over the bucket (NewLimiter(b)), and tests of that
// path say so.

// Tokens returns the level right now, fractions and debt included.
func (b *Bucket) Tokens() float64 { return b.Status().Level }

func (b *Bucket) Name() string    { return b.name }
func (b *Bucket) Capacity() int64 { return b.capacity() }
func (b *Bucket) Rate() Rate      { return b.Status().Rate }

func (b *Bucket) PausedUntil() (time.Time, bool) {
	u := b.pausedUntil()
	return u, !u.IsZero()
}

func (b *Bucket) PauseUntil(t time.Time) { b.pauseUntil(t) }
func (b *Bucket) Drain(remaining int64)  { b.lower(remaining) }

// Refund and Charge change the level by n, as a Permit's settlement does.
func (b *Bucket) Refund(n int64) error { return b.adjust(n, true) }
func (b *Bucket) Charge(n int64) error { return b.adjust(n, false) }

func (b *Bucket) adjust(n int64, refund bool) error {
	if n < 0 {
		return errNegativeCost
	}
	g := b.lock()
	defer g.Mu.Unlock()
	now := g.Now()
	g.serve(now)
	b.Advance(&b.lvl, now)
	if refund {
		b.Give(&b.lvl, n)
	} else {
		b.lvl.Take(n)
	}
	g.changed(now)
	return nil
}

func (b *Bucket) AcquirePermit(ctx context.Context, cost int64) (Permit, error) {
	if err := b.Acquire(ctx, cost); err != nil {
		return nil, err
	}
	return newPermit(b.self[:], []int64{cost}), nil
}

func (b *Bucket) Reserve(cost int64) (*Reservation, error) {
	if cost <= 0 {
		return nil, errNotPositive
	}
	return reserve(b.self[:], []int64{cost})
}

func (l *Limiter) Buckets() []*Bucket { return append([]*Bucket(nil), l.bs...) }

// OK reports whether the reservation still holds.
func (r *Reservation) OK() bool { return r.Delay() != time.Duration(1<<63-1) }

func (k *Keyed[K]) Sweep() int { return k.sweepAll() }
