package headers

import (
	"math"
	"math/bits"
	"time"
)

// maxDuration is where every parsed duration saturates.
const maxDuration = time.Duration(math.MaxInt64)

// epochThreshold decides whether a reset value counts seconds from now or
// names an instant in Unix seconds: from 1e9 on it is an instant. 1e9 s is
// 2001-09-09 as an instant and almost 32 years as a delay; no server means the
// delay, and every epoch in use today is larger.
const epochThreshold = 1_000_000_000

// maxFracScale bounds the fraction digits kept: 18 digits are below a
// nanosecond even for hours, and 10^18 still fits a uint64.
const maxFracScale = 1_000_000_000_000_000_000

// decimal is a non-negative decimal number whole + frac/scale, as read from
// a header. A whole part too large for a uint64 saturates.
type decimal struct {
	whole uint64
	frac  uint64 // numerator of the fraction; frac < scale
	scale uint64 // a power of ten, 1 when there is no fraction
}

// parseDecimal reads digits, optionally followed by '.' and more digits, and
// nothing else: no sign, exponent, hexadecimal, underscore, NaN or Inf, which
// strconv.ParseFloat would all accept.
func parseDecimal(s string) (decimal, bool) {
	d := decimal{scale: 1}
	i := 0
	for ; i < len(s) && isDigit(s[i]); i++ {
		d.whole = satMulAdd(d.whole, 10, uint64(s[i]-'0'))
	}
	if i == 0 {
		return decimal{}, false
	}
	if i == len(s) {
		return d, true
	}
	if s[i] != '.' || i+1 == len(s) {
		return decimal{}, false
	}
	for i++; i < len(s); i++ {
		if !isDigit(s[i]) {
			return decimal{}, false
		}
		if d.scale < maxFracScale {
			d.frac = d.frac*10 + uint64(s[i]-'0')
			d.scale *= 10
		}
	}
	return d, true
}

// duration converts d, counted in unit, to a Duration, saturating at
// maxDuration. The fraction is converted exactly and truncated to the
// nanosecond.
func (d decimal) duration(unit time.Duration) time.Duration {
	u := uint64(unit)
	hi, v := bits.Mul64(d.whole, u)
	if hi != 0 {
		return maxDuration
	}
	if d.frac != 0 {
		// frac < scale, so hi < scale and Div64 cannot panic.
		fh, fl := bits.Mul64(d.frac, u)
		f, _ := bits.Div64(fh, fl, d.scale)
		var carry uint64
		v, carry = bits.Add64(v, f, 0)
		if carry != 0 {
			return maxDuration
		}
	}
	if v > math.MaxInt64 {
		return maxDuration
	}
	return time.Duration(v)
}

// parseCount reads a limit or remaining count: decimal digits only. Values
// beyond math.MaxInt64 saturate there, since "more than can be counted" is
// what such a server means.
func parseCount(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = satMulAdd(n, 10, uint64(s[i]-'0'))
	}
	return int64(min(n, math.MaxInt64)), true
}

// satMulAdd returns a*m + c, saturating at math.MaxUint64.
func satMulAdd(a, m, c uint64) uint64 {
	hi, lo := bits.Mul64(a, m)
	if hi != 0 {
		return math.MaxUint64
	}
	lo, carry := bits.Add64(lo, c, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return lo
}

// until returns how long from ref until t: 0 when t is not after ref, and
// saturated at maxDuration (time.Time.Sub saturates too).
func until(t, ref time.Time) time.Duration {
	return max(t.Sub(ref), 0)
}

// epochUntil returns how long from ref until the Unix instant d (in seconds),
// saturating for instants too far ahead for a Duration.
func epochUntil(d decimal, ref time.Time) time.Duration {
	// 1<<40 s is some 35,000 years: far beyond maxDuration from any ref a
	// server can mean, and small enough for time.Unix not to overflow.
	if d.whole >= 1<<40 {
		return maxDuration
	}
	nsec := decimal{frac: d.frac, scale: d.scale}.duration(time.Second)
	return until(time.Unix(int64(d.whole), int64(nsec)), ref)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// trimOWS removes the optional whitespace (SP and HTAB) that HTTP allows
// around a field value.
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
