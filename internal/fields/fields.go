// Package fields formats the values of the rate-limit fields the library
// writes (RateLimit-Policy, RateLimit, Retry-After) without net/http, so
// that the core can keep a Keyed's values made once; package headers sets
// them on an http.Header.
package fields

import (
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// maxSFInteger is the largest Integer a Structured Field may carry
// (RFC 8941 §3.3.1); larger values are clamped so the field stays valid.
const maxSFInteger = 999_999_999_999_999

// RetryAfter is a Retry-After value: d in whole seconds, rounded up so that
// a client never retries early (any d > 0 writes at least 1; d <= 0 writes
// 0).
func RetryAfter(d time.Duration) string { return strconv.FormatInt(CeilDiv(d, time.Second), 10) }

// IETFPolicy is a RateLimit-Policy member, `name;q=quota;qu=unit;w=window`,
// for a policy name already serialized as a String (see Quote). An empty
// unit or "requests", the draft's default, writes no qu, and window <= 0 no
// w; the window is in whole seconds rounded up.
func IETFPolicy(name, unit string, quota int64, window time.Duration) string {
	var b strings.Builder
	b.Grow(len(name) + len(unit) + 32)
	b.WriteString(name)
	b.WriteString(";q=")
	b.WriteString(strconv.FormatInt(Clamp(quota), 10))
	if unit != "" && unit != "requests" {
		b.WriteString(";qu=")
		b.WriteString(Quote(unit))
	}
	if window > 0 {
		b.WriteString(";w=")
		b.WriteString(strconv.FormatInt(Clamp(CeilDiv(window, time.Second)), 10))
	}
	return b.String()
}

// IETFState is a RateLimit member, `name;r=remaining;t=reset`, for a policy
// name already serialized as a String (see Quote); reset in whole seconds
// rounded up.
func IETFState(name string, remaining int64, reset time.Duration) string {
	var b strings.Builder
	b.Grow(len(name) + 24)
	b.WriteString(name)
	b.WriteString(";r=")
	b.WriteString(strconv.FormatInt(Clamp(remaining), 10))
	b.WriteString(";t=")
	b.WriteString(strconv.FormatInt(Clamp(CeilDiv(reset, time.Second)), 10))
	return b.String()
}

// PolicyWindow expresses a rate of tokens a period as a quota over a whole
// number of seconds, IETF's window: the rate's own period if it is one, else
// the period rounded up to the second with the quota scaled down to match,
// so that it never overstates the rate.
func PolicyWindow(tokens int64, period time.Duration) (quota int64, window time.Duration) {
	if period <= 0 {
		return 0, 0
	}
	if period%time.Second == 0 || period > time.Duration(1<<63-1)-time.Second {
		return tokens, period
	}
	window = (period/time.Second + 1) * time.Second
	hi, lo := bits.Mul64(uint64(max(tokens, 0)), uint64(window))
	if hi >= uint64(period) {
		return 1<<63 - 1, window
	}
	q, _ := bits.Div64(hi, lo, uint64(period))
	return int64(min(q, 1<<63-1)), window
}

// CeilDiv returns d/unit rounded up, 0 for d <= 0.
func CeilDiv(d, unit time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	n := d / unit
	if d%unit != 0 {
		n++
	}
	return int64(n)
}

// Clamp returns n within the Integers a Structured Field may carry,
// negative values as 0.
func Clamp(n int64) int64 { return min(max(n, 0), maxSFInteger) }

// Quote serializes s as a Structured Field String; bytes outside printable
// ASCII are written as '?', as a String cannot hold them.
func Quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// PolicyName is the name WriteIETF gives a limit: its own, or "default".
func PolicyName(name string) string {
	if name == "" {
		return "default"
	}
	return name
}
