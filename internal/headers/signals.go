package headers

import "time"

// Family names the header family a [Quota] was read from.
type Family uint8

// The header families, in the order Parse reports their quotas.
const (
	// FamilyIETF is RateLimit-Policy and RateLimit
	// (draft-ietf-httpapi-ratelimit-headers-10).
	FamilyIETF Family = iota + 1
	// FamilyIETFLegacy is RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset (draft -06 and earlier).
	FamilyIETFLegacy
	// FamilyXRateLimit is X-RateLimit-Limit, -Remaining, -Reset and
	// -Reset-After (GitHub, Discord and many others).
	FamilyXRateLimit
	// FamilyXRateLimitHyphenated is X's x-rate-limit-limit, -remaining and
	// -reset.
	FamilyXRateLimitHyphenated
	// FamilyOpenAI is x-ratelimit-{limit,remaining,reset}-{requests,tokens}.
	FamilyOpenAI
	// FamilyAnthropic is
	// anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}.
	FamilyAnthropic
	// FamilyShopify is X-Shopify-Shop-Api-Call-Limit.
	FamilyShopify
)

// String returns a short lower-case name such as "ietf" or "openai".
func (f Family) String() string {
	switch f {
	case FamilyIETF:
		return "ietf"
	case FamilyIETFLegacy:
		return "ietf-legacy"
	case FamilyXRateLimit:
		return "x-ratelimit"
	case FamilyXRateLimitHyphenated:
		return "x-rate-limit"
	case FamilyOpenAI:
		return "openai"
	case FamilyAnthropic:
		return "anthropic"
	case FamilyShopify:
		return "shopify"
	}
	return "unknown"
}

// Quota is one limit a server reported on a response. Counts are hints: a
// server may round them (Anthropic rounds remaining tokens to the thousand).
type Quota struct {
	// Family is the header family the quota was read from.
	Family Family
	// Name is "requests", "tokens", "input-tokens" or "output-tokens" for
	// OpenAI and Anthropic, the policy name for FamilyIETF, and "" for the
	// families whose quota is unnamed.
	Name string
	// Unit is what an IETF policy counts, from its qu parameter: "" for
	// requests, the default, or "content-bytes", "concurrent-requests" or
	// another unit as sent. It is "" for the other families.
	Unit string
	// Resource is GitHub's X-RateLimit-Resource ("core", "search",
	// "graphql"): which of the server's quotas the counters describe. It is
	// "" when absent, malformed, or for the other families.
	Resource string
	// Limit is the size of the quota, or -1 when not reported.
	Limit int64
	// Remaining is what is left of it, or -1 when not reported.
	Remaining int64
	// Reset is how long until the quota is restored, or -1 when not
	// reported. Parse caps it at its maxPause argument.
	Reset time.Duration
	// Window is the period the quota applies to (the IETF w parameter), or
	// -1 when unknown. It describes the policy rather than asking for a
	// wait, so it is not capped at maxPause (capping a daily window at a
	// minute would overstate the rate 1440 times); it saturates at the
	// largest time.Duration.
	Window time.Duration
}

// Signals is everything a response said about rate limits.
type Signals struct {
	// RetryAfter is the wait the server asked for, from Retry-After-Ms or
	// else Retry-After; valid only when HasRetryAfter. It is never negative
	// and is capped at Parse's maxPause argument.
	RetryAfter time.Duration
	// HasRetryAfter reports that the response carried a valid
	// Retry-After-Ms or Retry-After.
	HasRetryAfter bool
	// Capped reports that RetryAfter or some Quota.Reset exceeded maxPause
	// and was lowered to it.
	Capped bool
	// ShouldRetry is the server's verdict from x-should-retry, or else from
	// Stripe-Should-Retry, when one of them is present and valid; nil
	// otherwise.
	ShouldRetry *bool
	// Quotas lists the quotas reported, grouped by Family in the order of
	// the Family constants; within a family, IETF policies keep their order
	// in the fields and the others are ordered requests, tokens,
	// input-tokens, output-tokens.
	Quotas []Quota
	// Malformed lists, once each, the canonical names of the fields whose
	// values were malformed and ignored, wholly or in part, in the order
	// Parse examines them. A malformed Date header is listed when Parse
	// needed it and fell back to now.
	Malformed []string
}

// Pause returns how long the response asks the client to hold off:
// RetryAfter when HasRetryAfter (Retry-After takes precedence over any quota
// reset, as the IETF draft requires), otherwise the longest [Quota.Wait]
// among quotas whose Remaining is 0. ok is false when there is neither.
func (s Signals) Pause() (d time.Duration, ok bool) {
	if s.HasRetryAfter {
		return s.RetryAfter, true
	}
	for _, q := range s.Quotas {
		if q.Remaining != 0 {
			continue
		}
		if w, has := q.Wait(); has && (!ok || w > d) {
			d, ok = w, true
		}
	}
	return d, ok
}

// RefillsToFull reports whether the quota's Reset is the time until the
// quota is whole again under a continuous refill, rather than the end of a
// window at which it is restored at once. OpenAI documents its reset as the
// time until the limit "resets to its initial state" (about 12 ms at 5,000
// requests a minute with one request used) and Anthropic its reset as the
// time the limit "will be fully replenished"; both refill continuously.
func (q Quota) RefillsToFull() bool {
	return q.Family == FamilyOpenAI || q.Family == FamilyAnthropic
}

// Wait returns how long until the quota holds one unit again, as far as the
// response says; ok is false when it does not say.
//
// For a quota whose Reset ends a window, that is Reset. For one that
// refills continuously to full ([Quota.RefillsToFull]), Reset covers the
// refill of Limit - Remaining units, so one unit comes back after
// Reset / (Limit - Remaining), rounded up to the nanosecond: waiting the
// whole Reset would idle a client for up to a window (a minute at
// OpenAI's 429 with "reset-requests: 1m0s") while the server had long
// refilled what the next call needs. Such a quota without a Limit above
// Remaining gives no wait.
func (q Quota) Wait() (time.Duration, bool) {
	if q.Reset < 0 {
		return 0, false
	}
	if !q.RefillsToFull() {
		return q.Reset, true
	}
	if q.Remaining < 0 || q.Limit <= q.Remaining {
		return 0, false
	}
	missing := uint64(q.Limit - q.Remaining)
	d := (uint64(q.Reset) + missing - 1) / missing
	return time.Duration(d), true
}

// Rounding is how far a server may have rounded Remaining: Anthropic
// reports its token counts (tokens, input-tokens, output-tokens; not
// requests) rounded to the nearest thousand, so a reported 2,000 means
// 1,500 to 2,499. It is 0 for counts that are exact.
func (q Quota) Rounding() int64 {
	if q.Family == FamilyAnthropic && q.Name != "requests" {
		return 1000
	}
	return 0
}

// MostRemaining is the most the quota may hold, as far as the response
// says: Remaining plus what its rounding may have taken off, so a client
// that lowers its level to it never drains below what the server has
// (a rounded 0 may still hold 499 tokens). It is -1 when Remaining is.
func (q Quota) MostRemaining() int64 {
	if q.Remaining < 0 {
		return -1
	}
	if r := q.Rounding(); r > 0 {
		return q.Remaining + r/2 - 1
	}
	return q.Remaining
}
