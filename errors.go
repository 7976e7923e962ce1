package throttle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrInvalidCost is returned for a cost that is zero or negative.
	ErrInvalidCost = errors.New("throttle: cost must be positive")
	// ErrCostCount is matched (errors.Is) by the error of a call given a
	// number of costs other than one per bucket of its Limiter, or per limit
	// of a key, or per class of an htb.Limiter or htb.Permit: a Limiter's
	// TryAcquire, WaitTime and Acquire, Permit.Settle, the same methods of
	// Keyed and of htb.Limiter, htb.Permit.Settle, and a Transport or
	// LimitHandler whose CostFunc returns the wrong number. The message
	// says how many were given for how many buckets or classes.
	ErrCostCount = errors.New("throttle: wrong number of costs")
	// ErrCostExceedsCapacity is returned for a cost that no bucket level can
	// ever cover: waiting for it would never end.
	ErrCostExceedsCapacity = errors.New("throttle: cost exceeds capacity")
	// ErrNoRefill is returned by Acquire and WaitTime when a bucket whose rate
	// is zero cannot cover the cost now, so it never will.
	ErrNoRefill = errors.New("throttle: bucket never refills and cannot cover the cost")
	// ErrSettled is returned when a Permit is settled or cancelled twice.
	ErrSettled = errors.New("throttle: permit already settled")
	// ErrInvalidOption is matched by the error of a constructor given an
	// Option it does not take (WithMaxKeys to New, say): an option is
	// never silently ignored. NewKeyed, which returns no error, panics
	// with it.
	ErrInvalidOption = errors.New("throttle: invalid option")
)

// WaitError is returned by Acquire when the context's deadline comes before
// the instant the tokens could be granted. Nothing is spent. It matches
// context.DeadlineExceeded with errors.Is.
type WaitError struct {
	// Wait is how long the caller would have had to wait.
	Wait time.Duration
	// Limit names the limit that bound the wait, if the bucket has a name.
	Limit string
}

func (e *WaitError) Error() string {
	if e.Limit != "" {
		return fmt.Sprintf("throttle: limit %q needs a wait of %v, past the context deadline", e.Limit, e.Wait)
	}
	return fmt.Sprintf("throttle: would wait %v, past the context deadline", e.Wait)
}

// Unwrap returns context.DeadlineExceeded.
func (e *WaitError) Unwrap() error { return context.DeadlineExceeded }

// costCount is the error for got costs given for want buckets.
func costCount(got, want int) error { return countErr(got, want, "bucket") }

// countErr is the error for got costs given for want items of kind.
func countErr(got, want int, kind string) error {
	return fmt.Errorf("%w: got %d %s for %d %s", ErrCostCount, got, plural(got, "cost"), want, plural(want, kind))
}

// errNoLimits is the error of a call on a zero Limiter or htb.Limiter,
// which has no limits: made as a zero value rather than by its
// constructor, it refuses every call rather than dereference nothing.
func errNoLimits(got int, kind, constructor string) error {
	return fmt.Errorf("%w: got %d %s for the 0 limits of a zero %s (make one with %s)", ErrCostCount, got, plural(got, "cost"), kind, constructor)
}

func plural(n int, noun string) string {
	switch {
	case n == 1:
		return noun
	case strings.HasSuffix(noun, "s"):
		return noun + "es"
	}
	return noun + "s"
}

// limitErr names the bucket in err when it has a name.
func limitErr(b *Bucket, err error, cost int64) error {
	if b.name == "" {
		if err == ErrCostExceedsCapacity {
			return fmt.Errorf("%w: cost %d, capacity %d", err, cost, b.Cap)
		}
		return err
	}
	if err == ErrCostExceedsCapacity {
		return fmt.Errorf("limit %q: %w: cost %d, capacity %d", b.name, err, cost, b.Cap)
	}
	return fmt.Errorf("limit %q: %w", b.name, err)
}
