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

// shape validates r for a bucket of the given capacity and reduces the rate
// by the gcd of tokens and period, which keeps the fraction small.
func (r Rate) shape(capacity int64) (shape, error) {
	if capacity < 0 {
		return shape{}, fmt.Errorf("throttle: capacity must not be negative, got %d", capacity)
	}
	if r.inf {
		return shape{Cap: capacity, Num: 1, Den: 1, PerDen: exact.NewDivider(1), Inf: true}, nil
	}
	if r.tokens < 0 {
		return shape{}, fmt.Errorf("throttle: rate must not be negative, got %d tokens", r.tokens)
	}
	if r.period <= 0 {
		return shape{}, fmt.Errorf("throttle: rate period must be positive, got %v", r.period)
	}
	num, den := uint64(r.tokens), uint64(r.period)
	if num == 0 {
		return shape{Cap: capacity, Den: 1, PerDen: exact.NewDivider(1)}, nil
	}
	g := exact.GCD(num, den)
	return shape{Cap: capacity, Num: num / g, Den: den / g, PerDen: exact.NewDivider(den / g)}, nil
}
