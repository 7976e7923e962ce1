package throttle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/throttlekit/throttle/internal/errs"
)

var (
	// ErrInvalidCost is matched (errors.Is) by the error of a call given a
	// cost that is negative, no positive cost at all, or a number of costs
	// other than one per limit: per bucket of a Limiter, per limit of a
	// key, per class of an htb.Limiter, and a Transport or LimitHandler
	// whose CostFunc returns the wrong number. The message says which.
	ErrInvalidCost = errs.InvalidCost // "throttle: invalid cost"
	// ErrCostExceedsCapacity is matched by the error for a cost that no
	// wait can ever cover: above a limit's capacity, on a closed limit
	// (capacity 0, which admits nothing), or on a limit that never refills
	// (Per(0, d)) and holds less than the cost. Waiting would never end, so
	// Acquire, WaitTime and Reserve fail at once. It also marks a Permit
	// settled far beyond a capacity: see Permit.Settle.
	ErrCostExceedsCapacity = errors.New("throttle: cost exceeds capacity")
	// ErrSettled is returned when a Permit is settled or cancelled twice.
	ErrSettled = errs.Settled // "throttle: permit already settled"
	// ErrInvalidOption is matched by the error of a constructor given an
	// Option it does not take (WithMaxKeys to New, say) or an invalid one
	// (WithClock(nil)), and by the error of a Keyed whose config returns an
	// invalid Limit for a key: an option is never silently ignored. NewKeyed,
	// which returns no error, panics for an invalid Option.
	ErrInvalidOption = errs.InvalidOption // "throttle: invalid option"
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

// errClosed and errNoRefill are the errors of a cost that a closed limit,
// or one that never refills, can never cover.
var (
	errClosed   = fmt.Errorf("%w: the limit is closed (capacity 0) and admits nothing", ErrCostExceedsCapacity)
	errNoRefill = fmt.Errorf("%w: the limit never refills and holds less than the cost", ErrCostExceedsCapacity)
)

// The errors of costs that are not valid, for the message to say why.
var (
	errNotPositive    = fmt.Errorf("%w: the cost must be positive", ErrInvalidCost)
	errNoPositiveCost = fmt.Errorf("%w: no cost is positive", ErrInvalidCost)
	errNegativeCost   = errs.NegativeCost
)

// costCount is the error for got costs given for want buckets.
func costCount(got, want int) error { return errs.CostCount(got, want, "bucket") }

// errNoLimits is the error of a call with got costs on a zero Limiter.
func errNoLimits(got int) error { return errs.NoLimits(got, "Limiter", "NewLimiter") }

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
