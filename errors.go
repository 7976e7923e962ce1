package throttle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/throttlekit/throttle/internal/errs"
)

var (
	// ErrInvalidCost is matched (errors.Is) by the error of a call given a
	// cost that is negative, no positive cost at all, or a number of costs
	// other than one per limit: per bucket of a Limiter, per limit of a
	// key, per class of an htb.Limiter, and a Transport or Handler
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
//
// It is also the explanation of a wait: what a Limiter's Explain answers
// for a cost before the call, and what an Event's Why carries for a call
// that waited or was refused. Its fields say which limit binds, for how
// long, behind how many calls, and whether a pause (a server's, with the
// response that asked for it) is what holds it.
type WaitError struct {
	// Wait is how long the caller would have had to wait.
	Wait time.Duration
	// Limit names the limit that bound the wait, if the bucket has a name:
	// the one whose own instant, pause included, comes last.
	Limit string
	// Ahead is how many calls were queued ahead of this one.
	Ahead int
	// Paused is the end of a pause in force on the binding limit, zero
	// if none: a paused limit does not refill, so all of it is in Wait.
	Paused time.Time
	// Cause is what asked for that pause, when it is known: for a pause a
	// server asked for through httpthrottle's Transport, its status, host
	// and the header that gave the wait ("429 from api.openai.com:
	// Retry-After 20s").
	Cause string
}

func (e *WaitError) Error() string {
	var b strings.Builder
	if e.Limit != "" {
		fmt.Fprintf(&b, "throttle: limit %q needs a wait of %v", e.Limit, e.Wait)
	} else {
		fmt.Fprintf(&b, "throttle: would wait %v", e.Wait)
	}
	if e.Ahead > 0 {
		fmt.Fprintf(&b, " behind %d queued", e.Ahead)
	}
	if !e.Paused.IsZero() {
		fmt.Fprintf(&b, ", paused until %s", e.Paused.Format(time.RFC3339Nano))
		if e.Cause != "" {
			fmt.Fprintf(&b, " by %s", e.Cause)
		}
	}
	b.WriteString(", past the context deadline")
	return b.String()
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
