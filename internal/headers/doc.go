// Package headers parses and writes the rate-limit signals HTTP servers send:
// Retry-After and Retry-After-Ms, the IETF RateLimit-Policy and RateLimit
// structured fields (draft-ietf-httpapi-ratelimit-headers-10) and their older
// RateLimit-Limit/-Remaining/-Reset form, the X-RateLimit-* family (GitHub,
// Discord and many others), X's x-rate-limit-*, OpenAI's
// x-ratelimit-*-{requests,tokens}, Anthropic's anthropic-ratelimit-*,
// Shopify's X-Shopify-Shop-Api-Call-Limit, and the x-should-retry and
// Stripe-Should-Retry verdicts.
//
// [Parse] reads a whole response header into [Signals]; it never fails and
// never panics: a malformed value is ignored and its field name listed in
// Signals.Malformed. One exported function per format (ParseRetryAfter,
// ParseRateLimitPolicy, ParseOpenAIReset, ...) parses a single field value.
// Durations that do not fit a time.Duration saturate at the largest one, so
// that callers can compare them against their own cap without overflow.
//
// The Set functions write the same formats, for servers and fakes; what they
// write parses back to the values given, rounded up to the resolution of the
// format (whole seconds for most).
package headers
