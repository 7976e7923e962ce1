package throttle

import (
	"fmt"
	"time"

	"github.com/throttlekit/throttle/internal/exact"
)

// Rate is how fast a bucket refills: a whole number of tokens spread evenly
// over a period. The zero Rate is invalid; Per(0, d) is a valid rate that
// never refills.
type Rate struct {
	tokens int64
	period time.Duration
	inf    bool // Inf
}

// Per returns a rate of tokens added evenly over each period. Per(0, d) never
// refills.
func Per(tokens int64, period time.Duration) Rate {
	return Rate{tokens: tokens, period: period}
}

// Every returns a rate of one token every interval.
func Every(interval time.Duration) Rate {
	return Rate{tokens: 1, period: interval}
}

// Tokens returns the number of tokens added each Period, as given to Per.
func (r Rate) Tokens() int64 { return r.tokens }

// Period returns the period over which Tokens are added, as given to Per.
func (r Rate) Period() time.Duration { return r.period }

// String formats r as "tokens/period", for example "500/1m0s", and Inf as
// "Inf".
func (r Rate) String() string {
	if r.inf {
		return "Inf"
	}
	return fmt.Sprintf("%d/%v", r.tokens, r.period)
}

// shape validates r for a bucket of the given capacity (see
// exact.NewShape).
func (r Rate) shape(capacity int64) (shape, error) {
	return exact.NewShape(capacity, r.tokens, r.period, r.inf)
}
