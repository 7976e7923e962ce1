package headers

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxSFInteger is the largest Integer a Structured Field may carry
// (RFC 8941 §3.3.1); larger values are clamped so the field stays valid.
const maxSFInteger = 999_999_999_999_999

// SetRetryAfter sets Retry-After to d in whole seconds, rounded up so that a
// client never retries early: any d > 0 writes at least 1, and d <= 0 writes
// 0.
func SetRetryAfter(h http.Header, d time.Duration) {
	h.Set("Retry-After", RetryAfter(d))
}

// RetryAfter is the Retry-After value [SetRetryAfter] writes.
func RetryAfter(d time.Duration) string { return strconv.FormatInt(ceilDiv(d, time.Second), 10) }

// SetRetryAfterMs sets Retry-After-Ms to d in whole milliseconds, rounded up
// (any d > 0 writes at least 1; d <= 0 writes 0).
func SetRetryAfterMs(h http.Header, d time.Duration) {
	h.Set("Retry-After-Ms", strconv.FormatInt(ceilDiv(d, time.Millisecond), 10))
}

// SetDate sets the Date header to now in IMF-fixdate, which Parse measures
// Retry-After dates and reset instants from. net/http writes Date itself when
// it is absent, from the real clock; a server under a fake clock sets it.
func SetDate(h http.Header, now time.Time) {
	h.Set("Date", now.UTC().Format(http.TimeFormat))
}

// SetShouldRetry sets x-should-retry to "true" or "false".
func SetShouldRetry(h http.Header, retry bool) {
	h.Set("X-Should-Retry", strconv.FormatBool(retry))
}

// SetIETF replaces RateLimit-Policy and RateLimit with one policy:
// `"policy";q=quota;w=window` and `"policy";r=remaining;t=reset`, window and
// reset in whole seconds rounded up. w is left out when window <= 0; negative
// counts and resets are written as 0, and numbers are clamped to the 15
// digits a Structured Field Integer allows. Bytes of policy outside printable
// ASCII are written as '?', as a String cannot hold them. Use [AddIETF] for
// further policies.
func SetIETF(h http.Header, policy string, quota int64, window time.Duration, remaining int64, reset time.Duration) {
	h.Del("Ratelimit-Policy")
	h.Del("Ratelimit")
	AddIETF(h, policy, quota, window, remaining, reset)
}

// AddIETF is [SetIETF] for a further policy: it adds one line to each field,
// and a client reads the lines as one list. Policy names must differ.
func AddIETF(h http.Header, policy string, quota int64, window time.Duration, remaining int64, reset time.Duration) {
	AddIETFUnit(h, policy, "", quota, window, remaining, reset)
}

// AddIETFUnit is [AddIETF] for a policy counting unit, written as its qu
// parameter ("content-bytes", say); an empty unit or "requests", the
// draft's default, writes none. Bytes of unit outside printable ASCII are
// written as '?'.
func AddIETFUnit(h http.Header, policy, unit string, quota int64, window time.Duration, remaining int64, reset time.Duration) {
	name := quoteSF(policy)
	h.Add("Ratelimit-Policy", IETFPolicy(name, unit, quota, window))
	h.Add("Ratelimit", IETFState(name, remaining, reset))
}

// IETFPolicy is the RateLimit-Policy value [AddIETFUnit] writes, for a
// policy name already serialized as a String (see QuoteSF).
func IETFPolicy(name, unit string, quota int64, window time.Duration) string {
	var b strings.Builder
	b.Grow(len(name) + len(unit) + 32)
	b.WriteString(name)
	b.WriteString(";q=")
	b.WriteString(strconv.FormatInt(clampSF(quota), 10))
	if unit != "" && unit != "requests" {
		b.WriteString(";qu=")
		b.WriteString(quoteSF(unit))
	}
	if window > 0 {
		b.WriteString(";w=")
		b.WriteString(strconv.FormatInt(clampSF(ceilDiv(window, time.Second)), 10))
	}
	return b.String()
}

// IETFState is the RateLimit value [AddIETFUnit] writes, for a policy name
// already serialized as a String (see QuoteSF).
func IETFState(name string, remaining int64, reset time.Duration) string {
	var b strings.Builder
	b.Grow(len(name) + 24)
	b.WriteString(name)
	b.WriteString(";r=")
	b.WriteString(strconv.FormatInt(clampSF(remaining), 10))
	b.WriteString(";t=")
	b.WriteString(strconv.FormatInt(clampSF(ceilDiv(reset, time.Second)), 10))
	return b.String()
}

// QuoteSF serializes s as a Structured Field String, as the IETF fields
// write a policy's name.
func QuoteSF(s string) string { return quoteSF(s) }

// SetXRateLimit sets X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset. The reset is written in whole seconds rounded up: as a
// delay when epoch is false, and as the Unix time of now+reset when epoch is
// true (GitHub's form), in which case a client measures it from the
// response's Date ([SetDate]), so a server under a fake clock should set Date
// from the same clock. As a client reads 1e9 and more as a Unix time, a delay
// is written as at most 999999999 (31 years). Negative values are written as
// 0.
func SetXRateLimit(h http.Header, limit, remaining int64, reset time.Duration, epoch bool, now time.Time) {
	h.Set("X-Ratelimit-Limit", strconv.FormatInt(max(limit, 0), 10))
	h.Set("X-Ratelimit-Remaining", strconv.FormatInt(max(remaining, 0), 10))
	if epoch {
		h.Set("X-Ratelimit-Reset", strconv.FormatInt(ceilUnix(now.Add(max(reset, 0))), 10))
		return
	}
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(min(ceilDiv(reset, time.Second), epochThreshold-1), 10))
}

// SetOpenAI sets x-ratelimit-limit-<kind>, x-ratelimit-remaining-<kind> and
// x-ratelimit-reset-<kind>, the reset as time.Duration.String writes it
// ("6m0s", "12ms", "1.5s"; exact, no rounding). Parse reads kind "requests"
// and "tokens". Negative values are written as 0.
func SetOpenAI(h http.Header, kind string, limit, remaining int64, reset time.Duration) {
	h.Set("X-Ratelimit-Limit-"+kind, strconv.FormatInt(max(limit, 0), 10))
	h.Set("X-Ratelimit-Remaining-"+kind, strconv.FormatInt(max(remaining, 0), 10))
	h.Set("X-Ratelimit-Reset-"+kind, max(reset, 0).String())
}

// SetAnthropic sets anthropic-ratelimit-<kind>-limit, -remaining and -reset,
// the reset as the RFC 3339 UTC instant now+reset rounded up to the whole
// second, as Anthropic writes it. A client measures it from the response's
// Date ([SetDate]). Parse reads kind "requests", "tokens", "input-tokens" and
// "output-tokens". Negative values are written as 0.
func SetAnthropic(h http.Header, kind string, limit, remaining int64, reset time.Duration, now time.Time) {
	prefix := "Anthropic-Ratelimit-" + kind
	h.Set(prefix+"-Limit", strconv.FormatInt(max(limit, 0), 10))
	h.Set(prefix+"-Remaining", strconv.FormatInt(max(remaining, 0), 10))
	at := time.Unix(ceilUnix(now.Add(max(reset, 0))), 0).UTC()
	h.Set(prefix+"-Reset", at.Format(time.RFC3339))
}

// ceilDiv returns d/unit rounded up, 0 for d <= 0.
func ceilDiv(d, unit time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	n := d / unit
	if d%unit != 0 {
		n++
	}
	return int64(n)
}

// ceilUnix returns t in Unix seconds, rounded up.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() != 0 {
		s++
	}
	return s
}

func clampSF(n int64) int64 { return min(max(n, 0), maxSFInteger) }

// quoteSF serializes s as a Structured Field String.
func quoteSF(s string) string {
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
