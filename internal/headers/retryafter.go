package headers

import (
	"math/big"
	"net/http"
	"strings"
	"time"
)

// ParseRetryAfter parses one Retry-After field value (RFC 9110 §10.2.3).
//
// A delay is decimal digits, optionally with a fraction ("120", "2.0",
// "0.1") and an exponent ("1e20", "1.5E3"): both are outside the RFC but
// servers send them, and a huge delay means the same however it is
// written ("100000000000000000000" and "1e20" alike). Signs, NaN and Inf
// are rejected. An HTTP-date may be in any of the
// three formats of RFC 9110 (IMF-fixdate, RFC 850, asctime) and is measured
// from now, for which the caller should pass the response's Date when it has
// a valid one, so that clock skew cancels; a date not after now gives 0.
// Surrounding spaces and tabs are ignored. A result beyond the largest
// time.Duration saturates there; capping is the caller's business. ok is
// false when v is neither a delay nor a date.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = trimOWS(v)
	if d, ok := parseRetryAfterDelay(v); ok {
		return d, true
	}
	t, ok := parseHTTPDate(v)
	if !ok {
		return 0, false
	}
	return until(t, now), true
}

// ParseRetryAfterMs parses one Retry-After-Ms field value, a delay in
// milliseconds read by the OpenAI and Anthropic SDKs: decimal digits with an
// optional fraction and exponent ("1500", "20.5", "1e3"), surrounding spaces
// and tabs ignored. It saturates like [ParseRetryAfter]; ok is false for
// anything else.
func ParseRetryAfterMs(v string) (time.Duration, bool) {
	return parseDelay(trimOWS(v), time.Millisecond)
}

func parseRetryAfterDelay(v string) (time.Duration, bool) {
	return parseDelay(v, time.Second)
}

// parseDelay reads a delay in unit: a decimal, or a decimal with an
// exponent.
func parseDelay(v string, unit time.Duration) (time.Duration, bool) {
	if dec, ok := parseDecimal(v); ok {
		return dec.duration(unit), true
	}
	return parseExponent(v, unit)
}

// parseExponent reads digits[.digits](e|E)[+|-]digits, exactly, saturating
// like decimal.duration.
func parseExponent(v string, unit time.Duration) (time.Duration, bool) {
	i := strings.IndexAny(v, "eE")
	if i < 0 {
		return 0, false
	}
	if _, ok := parseDecimal(v[:i]); !ok {
		return 0, false
	}
	exp := v[i+1:]
	if exp != "" && (exp[0] == '+' || exp[0] == '-') {
		exp = exp[1:]
	}
	e, ok := parseCount(exp)
	if !ok {
		return 0, false
	}
	if e > 40 {
		// Beyond any Duration, or below a nanosecond: saturate without
		// building huge numbers.
		var zero big.Rat
		m, _ := new(big.Rat).SetString(v[:i])
		if m.Cmp(&zero) == 0 || v[i+1] == '-' {
			return 0, true
		}
		return maxDuration, true
	}
	r, ok := new(big.Rat).SetString(v)
	if !ok {
		return 0, false
	}
	r.Mul(r, new(big.Rat).SetInt64(int64(unit)))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !n.IsInt64() {
		return maxDuration, true
	}
	return time.Duration(n.Int64()), true
}

// parseHTTPDate wraps http.ParseTime, skipping it for values that cannot be
// a date: all three formats start with a letter, and failures allocate.
func parseHTTPDate(v string) (time.Time, bool) {
	if v == "" || !isAlpha(v[0]) {
		return time.Time{}, false
	}
	t, err := http.ParseTime(v)
	return t, err == nil
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// parseSeconds reads a delay in seconds as decimal digits with an optional
// fraction only: the grammar of Discord's X-RateLimit-Reset-After, whose
// values are always written so.
func parseSeconds(v string) (time.Duration, bool) {
	dec, ok := parseDecimal(v)
	if !ok {
		return 0, false
	}
	return dec.duration(time.Second), true
}
