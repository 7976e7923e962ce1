package headers

import (
	"net/http"
	"strings"
	"time"
)

// Parse reads every rate-limit signal in the response header h. It never
// fails: a malformed value is ignored and its field listed in
// Signals.Malformed.
//
// Keys must be canonical, as net/http makes them (http.CanonicalHeaderKey).
// now is the time the response was received. HTTP-dates, Unix instants and
// RFC 3339 instants are measured from the response's Date header when it is
// valid, so that clock skew between server and client cancels, and from now
// otherwise. Every wait (RetryAfter, Quota.Reset) above maxPause is lowered
// to maxPause and sets Signals.Capped; maxPause <= 0 means no cap other than
// the largest time.Duration.
//
// Retry-After-Ms, when valid, takes precedence over Retry-After. A field
// that allows one value but comes in several lines (or, for fields other
// than Retry-After and Date, whose dates hold commas, as a comma-separated
// list, which is how proxies join lines) is used only when all the values
// are the same, and is malformed otherwise.
// X-RateLimit-Reset-After takes precedence over X-RateLimit-Reset. A reset
// sent as a number counts seconds when below 1e9 and is a Unix instant from
// 1e9 on (see [ParseXRateLimitReset]). RateLimit-Policy and RateLimit are
// read up to 8 KiB each, all their lines together; the lines past that are
// ignored and the field listed malformed, so that Parse costs no more than a
// walk over the values of a header of 100,000 policies. The legacy RateLimit-Limit may carry
// the policy list of drafts -00 to -05 ("10, 10;w=1"); its first number is
// the limit. The formats of each family are documented on the function that
// parses them: [ParseRetryAfter], [ParseRetryAfterMs], [ParseRateLimitPolicy],
// [ParseRateLimit], [ParseXRateLimitReset], [ParseResetAfter],
// [ParseOpenAIReset], [ParseAnthropicReset], [ParseCount],
// [ParseShouldRetry], [ParseShopifyCallLimit].
func Parse(h http.Header, now time.Time, maxPause time.Duration) Signals {
	p := parser{h: h, now: now, maxPause: maxPause}
	p.parse(families(h))
	return p.s
}

// Clock tells the time; a clockwork.Clock is one.
type Clock interface{ Now() time.Time }

// ParseClock is Parse reading now from clock, and only when a field needs
// it (most responses carry no instant, or a Date to measure from), and
// storing the result in *dst: one copy, where returning the struct through
// the callers' frames copied it several times over.
func ParseClock(dst *Signals, h http.Header, clock Clock, maxPause time.Duration) {
	// A response with no field of any family, the common case, costs the
	// pass over its keys and nothing more.
	present := families(h)
	if present == 0 {
		*dst = Signals{}
		return
	}
	var p parser // filled in place: see exchange in the root package
	p.h, p.clock, p.maxPause = h, clock, maxPause
	p.parse(present)
	*dst = p.s
}

// parse fills p.s from the families present, as families reports them:
// most responses carry one family or none, and the absent ones cost no map
// lookups.
func (p *parser) parse(present uint) {
	if present&hasRetryAfter != 0 {
		p.retryAfter()
	}
	if present&hasVerdict != 0 {
		p.shouldRetry()
	}
	if present&hasRateLimit != 0 {
		p.ietf()
		p.counters(FamilyIETFLegacy, "", "Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset", resetDeltaOrEpoch)
	}
	if present&hasXRateLimit != 0 {
		p.counters(FamilyXRateLimit, "", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", resetDiscord)
	}
	if present&hasXRateLimitHyphenated != 0 {
		p.counters(FamilyXRateLimitHyphenated, "", "X-Rate-Limit-Limit", "X-Rate-Limit-Remaining", "X-Rate-Limit-Reset", resetDeltaOrEpoch)
	}
	if present&hasOpenAI != 0 {
		p.counters(FamilyOpenAI, "requests", "X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests", resetGoDuration)
		p.counters(FamilyOpenAI, "tokens", "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens", resetGoDuration)
	}
	if present&hasAnthropic != 0 {
		p.counters(FamilyAnthropic, "requests", "Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset", resetRFC3339)
		p.counters(FamilyAnthropic, "tokens", "Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset", resetRFC3339)
		p.counters(FamilyAnthropic, "input-tokens", "Anthropic-Ratelimit-Input-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset", resetRFC3339)
		p.counters(FamilyAnthropic, "output-tokens", "Anthropic-Ratelimit-Output-Tokens-Limit", "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset", resetRFC3339)
	}
	if present&hasShopify != 0 {
		p.shopify()
	}
}

// Bits for the groups of fields a header holds.
const (
	hasRetryAfter           = 1 << iota // Retry-After, Retry-After-Ms
	hasVerdict                          // X-Should-Retry, Stripe-Should-Retry
	hasRateLimit                        // Ratelimit*: IETF and legacy IETF
	hasXRateLimit                       // X-Ratelimit-*, but for OpenAI's
	hasOpenAI                           // X-Ratelimit-*-Requests, X-Ratelimit-*-Tokens
	hasXRateLimitHyphenated             // X-Rate-Limit-*
	hasAnthropic                        // Anthropic-Ratelimit-*
	hasShopify                          // X-Shopify-Shop-Api-Call-Limit
)

// families returns the has* bits of the fields in h. Iterating a map costs
// about as much per entry as a lookup, so a large header is not scanned and
// every group is looked up instead.
func families(h http.Header) uint {
	if len(h) > 24 {
		return ^uint(0)
	}
	var bits uint
	for k := range h {
		if k == "" {
			continue
		}
		switch k[0] {
		case 'R':
			if strings.HasPrefix(k, "Retry-After") {
				bits |= hasRetryAfter
			} else if strings.HasPrefix(k, "Ratelimit") {
				bits |= hasRateLimit
			}
		case 'X':
			switch {
			case strings.HasPrefix(k, "X-Ratelimit-"):
				if strings.HasSuffix(k, "-Requests") || strings.HasSuffix(k, "-Tokens") {
					bits |= hasOpenAI
				} else {
					bits |= hasXRateLimit
				}
			case strings.HasPrefix(k, "X-Rate-Limit-"):
				bits |= hasXRateLimitHyphenated
			case k == "X-Should-Retry":
				bits |= hasVerdict
			case k == "X-Shopify-Shop-Api-Call-Limit":
				bits |= hasShopify
			}
		case 'S':
			if k == "Stripe-Should-Retry" {
				bits |= hasVerdict
			}
		case 'A':
			if strings.HasPrefix(k, "Anthropic-Ratelimit-") {
				bits |= hasAnthropic
			}
		}
	}
	return bits
}

// resetFormat selects how a family writes its reset.
type resetFormat uint8

const (
	resetDeltaOrEpoch resetFormat = iota // seconds, or a Unix instant from 1e9 on
	resetDiscord                         // as resetDeltaOrEpoch, but X-Ratelimit-Reset-After first
	resetGoDuration                      // time.ParseDuration syntax or bare seconds
	resetRFC3339                         // an instant
)

type parser struct {
	h        http.Header
	now      time.Time
	clock    Clock // when set, now is read from it when first needed
	maxPause time.Duration
	ref      time.Time // Date, or now; valid when refDone
	refDone  bool
	s        Signals
}

// reference returns the time instants are measured from: the response's
// Date when valid, now otherwise. Date is parsed only when needed.
func (p *parser) reference() time.Time {
	if !p.refDone {
		p.refDone = true
		valid := false
		if v, ok := p.single("Date", false); ok {
			if p.ref, valid = parseHTTPDate(v); !valid {
				p.malformed("Date")
			}
		}
		if !valid {
			p.ref = p.now
			if p.clock != nil {
				p.ref = p.clock.Now()
			}
		}
	}
	return p.ref
}

func (p *parser) malformed(key string) {
	for _, k := range p.s.Malformed {
		if k == key {
			return
		}
	}
	p.s.Malformed = append(p.s.Malformed, key)
}

// capped applies maxPause to a wait.
func (p *parser) capped(d time.Duration) time.Duration {
	if p.maxPause > 0 && d > p.maxPause {
		p.s.Capped = true
		return p.maxPause
	}
	return d
}

// single returns the one value of the field key. A field sent several times
// is accepted only when every line carries the same value; with list set,
// each line is also split at commas and every member must be the same. ok is
// false when the field is absent or conflicting; a conflict is recorded as
// malformed.
func (p *parser) single(key string, list bool) (string, bool) {
	lines := p.h[key]
	if len(lines) == 0 {
		return "", false
	}
	first := trimOWS(lines[0])
	if len(lines) == 1 && (!list || !containsComma(first)) {
		return first, true
	}
	if list {
		first, _, _ = cutComma(first)
	}
	for _, line := range lines {
		if !list {
			if trimOWS(line) != first {
				p.malformed(key)
				return "", false
			}
			continue
		}
		for rest, more := line, true; more; {
			var member string
			member, rest, more = cutComma(rest)
			if member != first {
				p.malformed(key)
				return "", false
			}
		}
	}
	return first, true
}

func containsComma(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			return true
		}
	}
	return false
}

// cutComma splits s at its first comma, trimming whitespace off the member.
func cutComma(s string) (member, rest string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			return trimOWS(s[:i]), s[i+1:], true
		}
	}
	return trimOWS(s), "", false
}

func (p *parser) retryAfter() {
	if v, ok := p.single("Retry-After-Ms", true); ok {
		if d, ok := ParseRetryAfterMs(v); ok {
			p.s.RetryAfter, p.s.HasRetryAfter = p.capped(d), true
		} else {
			p.malformed("Retry-After-Ms")
		}
	}
	// Retry-After is read even when Retry-After-Ms won, so that a malformed
	// one is still reported. An HTTP-date holds a comma: no list splitting.
	v, ok := p.single("Retry-After", false)
	if !ok {
		return
	}
	d, ok := parseRetryAfterDelay(v)
	if !ok {
		var t time.Time
		if t, ok = parseHTTPDate(v); ok {
			d = until(t, p.reference())
		}
	}
	switch {
	case !ok:
		p.malformed("Retry-After")
	case !p.s.HasRetryAfter:
		p.s.RetryAfter, p.s.HasRetryAfter = p.capped(d), true
	}
}

func (p *parser) shouldRetry() {
	for _, key := range [...]string{"X-Should-Retry", "Stripe-Should-Retry"} {
		v, ok := p.single(key, true)
		if !ok {
			continue
		}
		retry, ok := ParseShouldRetry(v)
		if !ok {
			p.malformed(key)
			continue
		}
		if p.s.ShouldRetry == nil {
			p.s.ShouldRetry = &retry
		}
	}
}

func (p *parser) ietf() {
	from := len(p.s.Quotas)
	ix := ietfIndex{from: from}
	for _, key := range [...]string{"Ratelimit-Policy", "Ratelimit"} {
		budget := maxIETFBytes
		for _, line := range p.h[key] {
			if budget -= len(line); budget < 0 {
				// The rest of the field is ignored: see maxIETFBytes.
				p.malformed(key)
				break
			}
			var ok bool
			if key == "Ratelimit-Policy" {
				p.s.Quotas, ok = appendPolicies(p.s.Quotas, &ix, line)
			} else {
				p.s.Quotas, ok = mergeLimits(p.s.Quotas, &ix, line)
			}
			if !ok {
				p.malformed(key)
			}
		}
	}
	for i := from; i < len(p.s.Quotas); i++ {
		if q := &p.s.Quotas[i]; q.Reset >= 0 {
			q.Reset = p.capped(q.Reset)
		}
	}
}

// maxIETFBytes is the most of RateLimit-Policy, and of RateLimit, that is
// read, all lines of the field together: a few dozen policies. Lines past it
// are ignored and the field listed malformed. A server controls its header
// (Go accepts 10 MB of it), and a field of 100,000 policies would otherwise
// cost the client a parse of each and a quota in memory for each, where the
// lines before the limit already say all a Limiter of a few buckets can use.
const maxIETFBytes = 8 << 10

// counters reads one limit/remaining/reset triple into a quota, added when
// at least one of the three is valid.
func (p *parser) counters(family Family, name, limitKey, remainingKey, resetKey string, format resetFormat) {
	q := Quota{Family: family, Name: name, Limit: -1, Remaining: -1, Reset: -1, Window: -1}
	// The legacy RateLimit-Limit may be a policy list: keep its first number.
	if v, ok := p.single(limitKey, family != FamilyIETFLegacy); ok {
		if family == FamilyIETFLegacy {
			v = firstListNumber(v)
		}
		if n, ok := parseCount(v); ok {
			q.Limit = n
		} else {
			p.malformed(limitKey)
		}
	}
	if v, ok := p.single(remainingKey, true); ok {
		if n, ok := parseCount(v); ok {
			q.Remaining = n
		} else {
			p.malformed(remainingKey)
		}
	}
	if format == resetDiscord {
		const afterKey = "X-Ratelimit-Reset-After"
		if v, ok := p.single(afterKey, true); ok {
			if d, ok := parseSeconds(v); ok {
				q.Reset = p.capped(d)
			} else {
				p.malformed(afterKey)
			}
		}
	}
	if v, ok := p.single(resetKey, format != resetRFC3339); ok {
		d, ok := p.reset(v, format)
		switch {
		case !ok:
			p.malformed(resetKey)
		case q.Reset < 0:
			q.Reset = p.capped(d)
		}
	}
	if q.Limit >= 0 || q.Remaining >= 0 || q.Reset >= 0 {
		if family == FamilyXRateLimit {
			q.Resource = p.resource()
		}
		p.add(q)
	}
}

// resource reads GitHub's X-RateLimit-Resource: a short token such as
// "core" or "search", which names the quota the counters describe.
func (p *parser) resource() string {
	const key = "X-Ratelimit-Resource"
	v, ok := p.single(key, true)
	if !ok {
		return ""
	}
	if len(v) == 0 || len(v) > 64 {
		p.malformed(key)
		return ""
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			p.malformed(key)
			return ""
		}
	}
	return v
}

func (p *parser) reset(v string, format resetFormat) (time.Duration, bool) {
	switch format {
	case resetGoDuration:
		return ParseOpenAIReset(v)
	case resetRFC3339:
		t, ok := parseRFC3339(v)
		if !ok {
			return 0, false
		}
		return until(t, p.reference()), true
	}
	dec, ok := parseDecimal(v)
	if !ok {
		return 0, false
	}
	if dec.whole >= epochThreshold {
		return epochUntil(dec, p.reference()), true
	}
	return dec.duration(time.Second), true
}

// firstListNumber returns the first member of a draft -00..-05 quota policy
// list such as "10, 10;w=1, 50;w=60".
func firstListNumber(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] == ',' || v[i] == ';' {
			return trimOWS(v[:i])
		}
	}
	return v
}

func (p *parser) shopify() {
	const key = "X-Shopify-Shop-Api-Call-Limit"
	v, ok := p.single(key, true)
	if !ok {
		return
	}
	used, size, ok := ParseShopifyCallLimit(v)
	if !ok {
		p.malformed(key)
		return
	}
	p.add(Quota{Family: FamilyShopify, Limit: size, Remaining: max(size-used, 0), Reset: -1, Window: -1})
}

// add appends q, sizing Quotas for the common case of a few quotas with one
// allocation.
func (p *parser) add(q Quota) {
	if p.s.Quotas == nil {
		p.s.Quotas = make([]Quota, 0, 4)
	}
	p.s.Quotas = append(p.s.Quotas, q)
}
