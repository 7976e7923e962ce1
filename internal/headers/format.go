package headers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/throttlekit/throttle/internal/fields"
)

// SetRetryAfter sets Retry-After to d in whole seconds, rounded up so that a
// client never retries early: any d > 0 writes at least 1, and d <= 0 writes
// 0.
func SetRetryAfter(h http.Header, d time.Duration) {
	h.Set("Retry-After", fields.RetryAfter(d))
}

// SetRetryAfterMs sets Retry-After-Ms to d in whole milliseconds, rounded up
// (any d > 0 writes at least 1; d <= 0 writes 0).
func SetRetryAfterMs(h http.Header, d time.Duration) {
	h.Set("Retry-After-Ms", strconv.FormatInt(fields.CeilDiv(d, time.Millisecond), 10))
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
	name := fields.Quote(policy)
	h.Add("Ratelimit-Policy", fields.IETFPolicy(name, unit, quota, window))
	h.Add("Ratelimit", fields.IETFState(name, remaining, reset))
}

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
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(min(fields.CeilDiv(reset, time.Second), epochThreshold-1), 10))
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

// ceilUnix returns t in Unix seconds, rounded up.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() != 0 {
		s++
	}
	return s
}
