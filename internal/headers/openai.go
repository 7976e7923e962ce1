package headers

import (
	"math"
	"math/bits"
	"time"
)

// ParseOpenAIReset parses an OpenAI x-ratelimit-reset-requests or
// x-ratelimit-reset-tokens value.
//
// It reads a Go duration as time.ParseDuration does ("1s", "6m0s", "12ms",
// "23h47m36.648s", ".5h"; units ns, us, µs, μs, ms, s, m, h), or a bare
// decimal number of seconds ("20", "0.5"). Signs are rejected: a reset is
// never negative. Unlike time.ParseDuration it saturates at the largest
// time.Duration instead of failing, and converts fractions with exact integer
// arithmetic, truncated to the nanosecond (time.ParseDuration goes through
// float64, so the two may differ by 1ns per unit segment). Surrounding spaces
// and tabs are ignored; ok is false for anything else.
func ParseOpenAIReset(v string) (time.Duration, bool) {
	v = trimOWS(v)
	if d, ok := parseRetryAfterDelay(v); ok {
		return d, true
	}
	return parseGoDuration(v)
}

// parseGoDuration is time.ParseDuration without the sign, saturating.
func parseGoDuration(s string) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	var total uint64
	for s != "" {
		i := 0
		var whole uint64
		for ; i < len(s) && isDigit(s[i]); i++ {
			whole = satMulAdd(whole, 10, uint64(s[i]-'0'))
		}
		pre := i > 0
		frac, scale := uint64(0), uint64(1)
		post := false
		if i < len(s) && s[i] == '.' {
			start := i + 1
			for i = start; i < len(s) && isDigit(s[i]); i++ {
				if scale < maxFracScale {
					frac = frac*10 + uint64(s[i]-'0')
					scale *= 10
				}
			}
			post = i > start
		}
		if !pre && !post {
			return 0, false
		}
		start := i
		for ; i < len(s) && s[i] != '.' && !isDigit(s[i]); i++ {
		}
		unit := durationUnit(s[start:i])
		if unit == 0 {
			return 0, false
		}
		s = s[i:]
		d := decimal{whole: whole, frac: frac, scale: scale}.duration(unit)
		var carry uint64
		total, carry = bits.Add64(total, uint64(d), 0)
		if carry != 0 || total > math.MaxInt64 {
			total = math.MaxInt64
		}
	}
	return time.Duration(total), true
}

// durationUnit returns the length of a time.ParseDuration unit, 0 if u is
// not one.
func durationUnit(u string) time.Duration {
	switch u {
	case "ns":
		return time.Nanosecond
	case "us", "µs", "μs": // U+00B5 micro sign, U+03BC Greek mu
		return time.Microsecond
	case "ms":
		return time.Millisecond
	case "s":
		return time.Second
	case "m":
		return time.Minute
	case "h":
		return time.Hour
	}
	return 0
}
