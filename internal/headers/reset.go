package headers

import "time"

// ParseXRateLimitReset parses an X-RateLimit-Reset, x-rate-limit-reset or
// RateLimit-Reset value: decimal seconds with an optional fraction (Discord
// sends "1470173023.123"). The magnitude decides the meaning: a value below
// 1e9 is a delay in seconds, a value of 1e9 or more is an instant in Unix
// seconds (1e9 s is 2001-09-09 as an instant and almost 32 years as a delay)
// and is measured from now, for which the caller should pass the response's
// Date when valid; an instant not after now gives 0. Surrounding spaces and
// tabs are ignored; results saturate at the largest time.Duration; ok is
// false for anything else (signs, exponents, NaN, Inf, empty).
func ParseXRateLimitReset(v string, now time.Time) (time.Duration, bool) {
	dec, ok := parseDecimal(trimOWS(v))
	if !ok {
		return 0, false
	}
	if dec.whole >= epochThreshold {
		return epochUntil(dec, now), true
	}
	return dec.duration(time.Second), true
}

// ParseResetAfter parses Discord's X-RateLimit-Reset-After: a delay in
// seconds with an optional fraction ("64.57"), surrounding spaces and tabs
// ignored, saturating at the largest time.Duration. ok is false otherwise.
func ParseResetAfter(v string) (time.Duration, bool) {
	return parseSeconds(trimOWS(v))
}

// ParseCount parses a limit or remaining count: decimal digits only, with
// surrounding spaces and tabs ignored. Counts beyond math.MaxInt64 saturate
// there. ok is false for anything else, negative numbers included.
func ParseCount(v string) (int64, bool) {
	return parseCount(trimOWS(v))
}

// ParseAnthropicReset parses an anthropic-ratelimit-*-reset value, an RFC 3339
// instant such as "2024-06-01T12:00:07Z", and returns how long after now it
// is; the caller should pass the response's Date as now when valid. An
// instant not after now gives 0. Surrounding spaces and tabs are ignored; ok
// is false when v is not RFC 3339.
func ParseAnthropicReset(v string, now time.Time) (time.Duration, bool) {
	t, ok := parseRFC3339(trimOWS(v))
	if !ok {
		return 0, false
	}
	return until(t, now), true
}

func parseRFC3339(v string) (time.Time, bool) {
	// Skip time.Parse when v cannot be a date: its errors allocate. Beyond
	// this, what time.Parse accepts is accepted (it allows a one-digit hour).
	if v == "" || !isDigit(v[0]) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	return t, err == nil
}

// NextPacificMidnight is the first midnight in Pacific time after now,
// when Google's quotas per day reset; UTC-8 where the time zone database
// is missing.
func NextPacificMidnight(now time.Time) time.Time {
	loc, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		loc = time.FixedZone("PST", -8*60*60)
	}
	t := now.In(loc)
	return time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
}
