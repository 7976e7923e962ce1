package ledger

import (
	"math"
	"math/bits"
	"time"

	"github.com/throttlekit/throttle"
)

// Ref names limit I of a Gate: the books keep their counts by it. Only a
// Gate of a comparable type can key one.
type Ref struct {
	G throttle.Gate
	I int
}

// RefillTime is how long a rate of tokens per period takes to refill n
// tokens, rounded up, exact in integers; 0 for n <= 0, and the longest
// Duration when that does not fit one.
func RefillTime(n, tokens int64, period time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	if tokens <= 0 || period <= 0 {
		return math.MaxInt64
	}
	hi, lo := bits.Mul64(uint64(n), uint64(period))
	if hi >= uint64(tokens) {
		return math.MaxInt64
	}
	d, r := bits.Div64(hi, lo, uint64(tokens))
	if r != 0 {
		d++
	}
	return time.Duration(min(d, math.MaxInt64))
}

// SatAdd adds two non-negative sums, saturating rather than wrapping.
func SatAdd[T ~int64](a, b T) T {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

// LatestPause is the end of the latest pause among sts, or zero.
func LatestPause(sts []throttle.LimitStatus) time.Time {
	var until time.Time
	for _, st := range sts {
		if st.Paused.After(until) {
			until = st.Paused
		}
	}
	return until
}
