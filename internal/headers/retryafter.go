package headers

import (
	"net/http"
	"time"
)

// ParseRetryAfter parses one Retry-After field value (RFC 9110 §10.2.3).
//
// A delay is decimal digits, optionally with a fraction ("120", "2.0",
// "0.1"): fractions are outside the RFC but servers send them. Signs,
// exponents, NaN and Inf are rejected. An HTTP-date may be in any of the
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
// optional fraction ("1500", "20.5"), surrounding spaces and tabs ignored. It
// saturates like [ParseRetryAfter]; ok is false for anything else.
func ParseRetryAfterMs(v string) (time.Duration, bool) {
	dec, ok := parseDecimal(trimOWS(v))
	if !ok {
		return 0, false
	}
	return dec.duration(time.Millisecond), true
}

func parseRetryAfterDelay(v string) (time.Duration, bool) {
	dec, ok := parseDecimal(v)
	if !ok {
		return 0, false
	}
	return dec.duration(time.Second), true
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
