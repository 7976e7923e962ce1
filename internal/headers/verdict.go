package headers

import "strings"

// ParseShouldRetry parses an x-should-retry or Stripe-Should-Retry value:
// "true" or "false" in any letter case, surrounding spaces and tabs ignored.
// ok is false for anything else.
func ParseShouldRetry(v string) (retry, ok bool) {
	v = trimOWS(v)
	switch {
	case strings.EqualFold(v, "true"):
		return true, true
	case strings.EqualFold(v, "false"):
		return false, true
	}
	return false, false
}

// ParseShopifyCallLimit parses Shopify's X-Shopify-Shop-Api-Call-Limit,
// "used/size" such as "32/40", spaces and tabs around either number
// ignored. ok is false unless both are counts as [ParseCount] reads them.
func ParseShopifyCallLimit(v string) (used, size int64, ok bool) {
	before, after, found := strings.Cut(v, "/")
	if !found {
		return 0, 0, false
	}
	used, ok1 := ParseCount(before)
	size, ok2 := ParseCount(after)
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	return used, size, true
}
