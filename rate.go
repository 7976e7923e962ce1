package throttle

import (
	"math/big"
	"strconv"
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

// Per returns a rate of tokens added evenly over each period: Per(60,
// time.Minute) for 60 a minute, Per(1, d) for one every d. Per(0, d) never
// refills. A period <= 0 is invalid: New and the other constructors refuse
// it rather than treat it as unlimited (that is Inf, by name).
func Per(tokens int64, period time.Duration) Rate {
	return Rate{tokens: tokens, period: period}
}

// Tokens returns the number of tokens added each Period, as given to Per.
func (r Rate) Tokens() int64 { return r.tokens }

// Period returns the period over which Tokens are added, as given to Per.
func (r Rate) Period() time.Duration { return r.period }

// rateUnits are the units String says a rate in, shortest first.
var rateUnits = [...]struct {
	d    time.Duration
	name string
}{{time.Second, "s"}, {time.Minute, "min"}, {time.Hour, "h"}, {24 * time.Hour, "day"}}

// String formats r as a person would say it: per the period given when it
// is a second, minute, hour or day ("60/min" for Per(60, time.Minute)),
// else a whole number per the shortest of those that has one ("10/s" for
// Per(1, 100*time.Millisecond)), else a decimal
// per second ("1.173/s", rounded to 6 significant digits where the decimal
// does not end), else tokens per period ("1/48h0m0s"). Inf is "Inf", and a
// rate no constructor takes says so ("invalid: 1/0s").
func (r Rate) String() string {
	switch {
	case r.inf:
		return "Inf"
	case r.period <= 0 || r.tokens < 0:
		return "invalid: " + strconv.FormatInt(r.tokens, 10) + "/" + r.period.String()
	case r.tokens == 0:
		return "0/s"
	}
	for _, u := range rateUnits {
		if r.period == u.d {
			return strconv.FormatInt(r.tokens, 10) + "/" + u.name
		}
	}
	per := func(u time.Duration) *big.Rat {
		return new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(r.tokens), big.NewInt(int64(u))), big.NewInt(int64(r.period)))
	}
	for _, u := range rateUnits {
		if v := per(u.d); v.IsInt() {
			return v.Num().String() + "/" + u.name
		}
	}
	if v := per(time.Second); v.Cmp(big.NewRat(1, 1)) >= 0 {
		if s, exact := v.FloatPrec(); exact && s <= 9 {
			return v.FloatString(s) + "/s"
		}
		f, _ := v.Float64()
		return strconv.FormatFloat(f, 'g', 6, 64) + "/s"
	}
	return strconv.FormatInt(r.tokens, 10) + "/" + r.period.String()
}

// shape validates r for a bucket of the given capacity (see
// exact.NewShape).
func (r Rate) shape(capacity int64) (shape, error) {
	return exact.NewShape(capacity, r.tokens, r.period, r.inf)
}
