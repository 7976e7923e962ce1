package throttle

import (
	"errors"
	"fmt"
)

// ErrUnknownLimit is returned by Limiter.SetRate and Limiter.SetCapacity
// for a name that none of the limiter's buckets has.
var ErrUnknownLimit = errors.New("throttle: no limit of that name")

// named returns the bucket called name, or an error that names it.
func (l *Limiter) named(name string) (*Bucket, error) {
	if b := l.Bucket(name); b != nil {
		return b, nil
	}
	return nil, fmt.Errorf("limit %q: %w", name, ErrUnknownLimit)
}

// SetRate changes the rate of the bucket named name, live: it is
// Bucket.SetRate on that bucket, so queued waiters are re-timed at once.
// On a Keyed limiter, keyed.Limiter(key).SetRate("tokens", r) changes the
// key's limit for as long as the key is held (see Keyed). It fails with
// ErrUnknownLimit when no bucket has that name, or with the error the rate
// is invalid for.
func (l *Limiter) SetRate(name string, r Rate) error {
	b, err := l.named(name)
	if err != nil {
		return err
	}
	return b.SetRate(r)
}

// SetCapacity changes the capacity of the bucket named name, live: it is
// Bucket.SetCapacity on that bucket. It fails with ErrUnknownLimit when no
// bucket has that name.
func (l *Limiter) SetCapacity(name string, capacity int64) error {
	b, err := l.named(name)
	if err != nil {
		return err
	}
	return b.SetCapacity(capacity)
}
