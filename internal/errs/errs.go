// Package errs holds the errors that package throttle shares with htb and
// trtcm: the sentinels a caller matches with errors.Is, which package
// throttle exports under its own names, and the wording of the errors
// built on them, so that a class's or a marker's error reads as a
// bucket's.
package errs

import (
	"errors"
	"fmt"
	"strings"
)

// The sentinels that more than the core's package returns; the core's
// doc comments (ErrInvalidCost, ErrSettled, ErrInvalidOption) say what
// each is matched by.
var (
	InvalidCost   = errors.New("throttle: invalid cost")
	Settled       = errors.New("throttle: permit already settled")
	InvalidOption = errors.New("throttle: invalid option")
)

// InvalidOptionf is the error of an option given a value outside its
// range, matching InvalidOption.
func InvalidOptionf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{InvalidOption}, args...)...)
}

// NegativeCost is the error of a cost, or a value given to Settle, below
// zero.
var NegativeCost = fmt.Errorf("%w: a cost is negative", InvalidCost)

// CostCount is the error for got costs given for want items of kind
// ("bucket", "class").
func CostCount(got, want int, kind string) error {
	return fmt.Errorf("%w: got %d %s for %d %s", InvalidCost, got, plural(got, "cost"), want, plural(want, kind))
}

// NoLimits is the error of a call with got costs on a zero value of kind
// (a Limiter, an htb.Limiter), which has no limits: made as a zero value
// rather than by its constructor, it refuses every call rather than
// dereference nothing.
func NoLimits(got int, kind, constructor string) error {
	return fmt.Errorf("%w: got %d %s for the 0 limits of a zero %s (make one with %s)", InvalidCost, got, plural(got, "cost"), kind, constructor)
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
