package trace

import (
	"errors"
	"math"
	"math/bits"
	"strconv"
	"time"
)

// Errors returned by the parsers. They are wrapped with the offending text;
// match them with errors.Is.
var (
	// ErrSyntax is returned for text that is not a number of the accepted
	// form.
	ErrSyntax = errors.New("not a decimal number")
	// ErrNegative is returned for a number written with a minus sign.
	ErrNegative = errors.New("must not be negative")
	// ErrRange is returned for a number that is too large, or has too many
	// significant digits, to be held exactly.
	ErrRange = errors.New("out of range")
	// ErrTooFine is returned for a time that is not a whole number of
	// nanoseconds.
	ErrTooFine = errors.New("finer than a nanosecond")
	// ErrNotWhole is returned where a whole number is required.
	ErrNotWhole = errors.New("not a whole number")
)

// maxDigits is the most significant digits a Decimal holds: every 19-digit
// number fits in a uint64.
const maxDigits = 19

// Decimal is an exact non-negative decimal number, Coef × 10^Exp. Parse
// normalises it so that Coef has no trailing zeros (and Exp is 0 when Coef
// is 0), which makes equal values compare equal with ==.
type Decimal struct {
	Coef uint64
	Exp  int32
}

// ParseDecimal parses a non-negative decimal number: digits with an
// optional fractional part and an optional exponent, such as "2", "0.5",
// ".25", "1e-3" or "1.5E6". A leading '+' is accepted; a leading '-' gives
// ErrNegative, so that callers can report a negative value distinctly.
// Signs other than one leading sign, spaces, underscores, hexadecimal,
// "Inf" and "NaN" are rejected with ErrSyntax. At most 19 significant
// digits are accepted (ErrRange beyond).
func ParseDecimal(s string) (Decimal, error) {
	if s == "" {
		return Decimal{}, ErrSyntax
	}
	switch s[0] {
	case '+':
		s = s[1:]
	case '-':
		if _, err := ParseDecimal(s[1:]); err == nil || errors.Is(err, ErrRange) {
			return Decimal{}, ErrNegative
		}
		return Decimal{}, ErrSyntax
	}
	var (
		coef     uint64
		digits   int // significant digits taken into coef
		exp      int64
		seen     bool // any mantissa digit
		dot      bool
		zeroRun  int // zeros pending after the last non-zero digit
		overflow bool
	)
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' {
			if dot {
				return Decimal{}, ErrSyntax
			}
			dot = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		seen = true
		if dot {
			exp--
		}
		if c == '0' {
			// Zeros are held back until a non-zero digit follows, so
			// that trailing zeros never count as significant.
			if digits > 0 {
				zeroRun++
			}
			continue
		}
		for ; zeroRun > 0; zeroRun-- {
			if digits >= maxDigits {
				overflow = true
			}
			coef *= 10
			digits++
		}
		if digits >= maxDigits {
			overflow = true
		}
		coef = coef*10 + uint64(c-'0')
		digits++
	}
	if !seen {
		return Decimal{}, ErrSyntax
	}
	// The held-back zeros scale the value without being stored.
	exp += int64(zeroRun)
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return Decimal{}, ErrSyntax
		}
		e, err := parseExponent(s[i+1:])
		if err != nil {
			return Decimal{}, err
		}
		if coef != 0 {
			exp += e
		}
	}
	if overflow {
		return Decimal{}, ErrRange
	}
	if coef == 0 {
		return Decimal{}, nil
	}
	// The same bound as on the written exponent, so that every value
	// accepted is printed back by String in a form ParseDecimal reads.
	if exp > maxExp || exp < -maxExp {
		return Decimal{}, ErrRange
	}
	return Decimal{Coef: coef, Exp: int32(exp)}, nil
}

// maxExp bounds exponents, written and resulting alike: no value beyond
// 10^±maxExp can be scaled to an int64 anyway.
const maxExp = 1_000_000

// parseExponent parses the optionally signed digits after 'e'. Exponents
// beyond ±maxExp are ErrRange.
func parseExponent(s string) (int64, error) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, ErrSyntax
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, ErrSyntax
		}
	}
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	if len(s) > 7 {
		return 0, ErrRange
	}
	e, _ := strconv.ParseInt(s, 10, 64)
	if e > maxExp {
		return 0, ErrRange
	}
	if neg {
		e = -e
	}
	return e, nil
}

// IsZero reports whether d is zero.
func (d Decimal) IsZero() bool { return d.Coef == 0 }

// Places returns how many digits d has after the decimal point: the
// smallest k such that d × 10^k is a whole number.
func (d Decimal) Places() int {
	if d.Exp >= 0 {
		return 0
	}
	return int(-d.Exp)
}

// Scaled returns d × 10^k if that is a whole number that fits in an int64.
// It returns ErrNotWhole when it is not whole and ErrRange when it does not
// fit.
func (d Decimal) Scaled(k int) (int64, error) {
	if d.Coef == 0 {
		return 0, nil
	}
	e := int64(d.Exp) + int64(k)
	if e < 0 {
		return 0, ErrNotWhole
	}
	if e > maxDigits {
		return 0, ErrRange
	}
	hi, lo := bits.Mul64(d.Coef, pow10[e])
	if hi != 0 || lo > math.MaxInt64 {
		return 0, ErrRange
	}
	return int64(lo), nil
}

// String formats d in plain decimal notation, without exponent, for
// messages.
func (d Decimal) String() string {
	s := strconv.FormatUint(d.Coef, 10)
	switch {
	case d.Coef == 0:
		return "0"
	case d.Exp >= 0:
		if d.Exp > 40 {
			return s + "e" + strconv.Itoa(int(d.Exp))
		}
		for range d.Exp {
			s += "0"
		}
		return s
	}
	p := int(-d.Exp)
	if p > 40 {
		return s + "e" + strconv.Itoa(int(d.Exp))
	}
	for len(s) <= p {
		s = "0" + s
	}
	return s[:len(s)-p] + "." + s[len(s)-p:]
}

var pow10 = [...]uint64{
	1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
}

// Pow10 returns 10^k for 0 <= k <= 18, the powers that fit in an int64.
func Pow10(k int) (int64, bool) {
	if k < 0 || k > 18 {
		return 0, false
	}
	return int64(pow10[k]), true
}

// ParseSeconds parses a non-negative time or duration in decimal seconds,
// such as "0", "1.5" or "2e-3", exactly. A value that is not a whole number
// of nanoseconds is ErrTooFine; one beyond the range of time.Duration
// (about 292 years) is ErrRange.
func ParseSeconds(s string) (time.Duration, error) {
	d, err := ParseDecimal(s)
	if err != nil {
		return 0, err
	}
	ns, err := d.Scaled(9)
	if errors.Is(err, ErrNotWhole) {
		return 0, ErrTooFine
	}
	if err != nil {
		return 0, err
	}
	return time.Duration(ns), nil
}
