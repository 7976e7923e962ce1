package headers

import (
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The fuzz targets check, beyond the absence of panics, the invariants callers
// rely on: waits never negative and never above the cap, counts never below
// -1, and agreement with the writers and with the standard library where the
// two accept the same input. Each has a checked-in corpus in testdata/fuzz.

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "2.0", "0.1", "", "-1", "NaN", "1e3", "10000000000", "9223372036.854775808",
		"Sun, 01 Jun 2025 12:02:00 GMT", "Sunday, 01-Jun-25 12:02:00 GMT", "Sun Jun  1 12:02:00 2025", " 5 "} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, v string, nowOffset int64) {
		now := testNow.Add(time.Duration(nowOffset))
		d, ok := ParseRetryAfter(v, now)
		if d < 0 || !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, %v", v, d, ok)
		}
		if d2, ok2 := ParseRetryAfter(" \t"+v+"\t ", now); d2 != d || ok2 != ok {
			t.Fatalf("surrounding whitespace changed ParseRetryAfter(%q): %v, %v then %v, %v", v, d, ok, d2, ok2)
		}
		if ms, ok := ParseRetryAfterMs(v); ms < 0 || !ok && ms != 0 {
			t.Fatalf("ParseRetryAfterMs(%q) = %v, %v", v, ms, ok)
		}
		if !ok {
			return
		}
		if dec, isDelay := parseDecimal(trimOWS(v)); isDelay && dec.whole < 1e6 {
			// Agreement with strconv, which is exact to 1 ulp here.
			fl, err := strconv.ParseFloat(trimOWS(v), 64)
			if err != nil {
				t.Fatalf("strconv.ParseFloat rejects delay %q: %v", v, err)
			}
			if diff := float64(d) - fl*1e9; diff > 1 || diff < -1 {
				t.Fatalf("ParseRetryAfter(%q) = %d ns; strconv says %f s", v, d, fl)
			}
		}
		h := http.Header{}
		SetRetryAfter(h, d)
		back, ok := ParseRetryAfter(h.Get("Retry-After"), now)
		if !ok || back < d || back-d >= time.Second {
			t.Fatalf("SetRetryAfter(%v) wrote %q, read back as %v, %v", d, h.Get("Retry-After"), back, ok)
		}
	})
}

func checkIETF(t *testing.T, qs []Quota) {
	t.Helper()
	seen := map[string]bool{}
	for _, q := range qs {
		if q.Family != FamilyIETF || q.Limit < -1 || q.Remaining < -1 || q.Reset < -1 || q.Window < -1 || q.Window == 0 {
			t.Fatalf("invalid quota %+v", q)
		}
		if seen[q.Name] {
			t.Fatalf("name %q twice in %+v", q.Name, qs)
		}
		seen[q.Name] = true
	}
}

func FuzzRateLimitPolicy(f *testing.F) {
	for _, s := range []string{`"default";q=100;w=60`, `"permin";q=50;w=60, "perhr";q=1000;w=3600`,
		`"a";q=10;w=60;qu="requests";pk=:cHsdsRa894==:`, `tok;q=1`, `("x" "y");q=1`, `"a";q=1,`, `"e\"s";q=1;d=@1;s=%"%c3"`,
		`"a";q=999999999999999;w=999999999999999`, `"a";q=1.5;w=?1`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, _ := ParseRateLimitPolicy(v)
		checkIETF(t, got)
		for _, q := range got {
			if q.Limit < 0 || q.Remaining != -1 || q.Reset != -1 {
				t.Fatalf("ParseRateLimitPolicy(%q): invalid policy %+v", v, q)
			}
		}
		// What was read writes back to the same policies.
		h := http.Header{}
		for _, q := range got {
			AddIETFUnit(h, q.Name, q.Unit, q.Limit, q.Window, 0, 0)
		}
		back, ok := ParseRateLimitPolicy(strings.Join(h["Ratelimit-Policy"], ", "))
		if !ok || !reflect.DeepEqual(back, got) {
			t.Fatalf("ParseRateLimitPolicy(%q) = %+v; written as %q and read back as %+v, %v", v, got, h["Ratelimit-Policy"], back, ok)
		}
	})
}

func FuzzRateLimit(f *testing.F) {
	for _, s := range []string{`"default";r=50;t=30`, `"a";r=0;t=0, "b";r=7`, `"a";t=5`, `"a";r=1;t=999999999999999`,
		`"a";r=1, "a";r=2`, `"a";r=1 , "b";r=`, `a;r=1;t=1;pk=:AA==:`, `("a");r=1`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got, _ := ParseRateLimit(v)
		checkIETF(t, got)
		for _, q := range got {
			if q.Remaining < 0 || q.Limit != -1 || q.Window != -1 {
				t.Fatalf("ParseRateLimit(%q): invalid limit %+v", v, q)
			}
		}
		h := http.Header{}
		for _, q := range got {
			AddIETF(h, q.Name, 0, 0, q.Remaining, q.Reset)
		}
		back, ok := ParseRateLimit(strings.Join(h["Ratelimit"], ", "))
		// The writer always writes t; an absent t reads back as 0.
		for i := range got {
			if got[i].Reset < 0 {
				got[i].Reset = 0
			}
		}
		if !ok || !reflect.DeepEqual(back, got) {
			t.Fatalf("ParseRateLimit(%q) = %+v; written as %q and read back as %+v, %v", v, got, h["Ratelimit"], back, ok)
		}
	})
}

func FuzzParseXRateLimitReset(f *testing.F) {
	for _, s := range []string{"30", "0.5", "999999999", "1000000000", "1748779230.250", "20000000000", "99999999999999999999", "-5", "1e9", ""} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, v string, nowOffset int64) {
		now := testNow.Add(time.Duration(nowOffset))
		d, ok := ParseXRateLimitReset(v, now)
		if d < 0 || !ok && d != 0 {
			t.Fatalf("ParseXRateLimitReset(%q) = %v, %v", v, d, ok)
		}
		after, okAfter := ParseResetAfter(v)
		if after < 0 || okAfter != ok {
			t.Fatalf("ParseResetAfter(%q) = %v, %v; ParseXRateLimitReset says %v", v, after, okAfter, ok)
		}
		if !ok {
			return
		}
		if dec, _ := parseDecimal(trimOWS(v)); dec.whole < epochThreshold && after != d {
			t.Fatalf("delay %q: ParseXRateLimitReset = %v, ParseResetAfter = %v", v, d, after)
		}
		// The writer's delta form reads back rounded up to the second, and
		// clamped below the epoch threshold.
		h := http.Header{}
		SetXRateLimit(h, 1, 1, d, false, now)
		want := min(d, (epochThreshold-1)*time.Second)
		if back := Parse(h, now, 0).Quotas[0].Reset; back < want || back-want >= time.Second {
			t.Fatalf("reset %v written as %q read back as %v", d, h.Get("X-Ratelimit-Reset"), back)
		}
	})
}

func FuzzParseOpenAIReset(f *testing.F) {
	for _, s := range []string{"1s", "6m0s", "12ms", "23h47m36.648s", "1.5h", ".5s", "1µs", "20", "0.5", "0",
		"2562047h47m16.854775807s", "99999999999999999999999h", "-1s", "1x", ".s", "0.333333333333333333333h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := ParseOpenAIReset(v)
		if d < 0 || !ok && d != 0 {
			t.Fatalf("ParseOpenAIReset(%q) = %v, %v", v, d, ok)
		}
		s := trimOWS(v)
		std, err := time.ParseDuration(s)
		signed := s != "" && (s[0] == '-' || s[0] == '+')
		// time.ParseDuration converts fractions through float64: allow 1ns
		// per unit.
		slack := time.Duration(strings.Count(s, "h") + strings.Count(s, "m") + strings.Count(s, "s"))
		if err == nil && !signed {
			if !ok || d-std > slack || std-d > slack {
				t.Fatalf("ParseOpenAIReset(%q) = %v, %v; time.ParseDuration says %v", v, d, ok, std)
			}
		}
		// A bare number of seconds (decimal or exponent form, as Retry-After
		// takes it) is not a Go duration but is accepted by design.
		if _, bare := parseRetryAfterDelay(s); ok && !bare && d < maxDur && err != nil {
			t.Fatalf("ParseOpenAIReset(%q) = %v without saturating; time.ParseDuration fails: %v", v, d, err)
		}
		if !ok {
			return
		}
		h := http.Header{}
		SetOpenAI(h, "tokens", 1, 1, d)
		if back, ok := ParseOpenAIReset(h.Get("X-Ratelimit-Reset-Tokens")); !ok || back != d {
			t.Fatalf("reset %v written as %q read back as %v, %v", d, h.Get("X-Ratelimit-Reset-Tokens"), back, ok)
		}
	})
}

func FuzzParseAnthropicReset(f *testing.F) {
	for _, s := range []string{"2025-06-01T12:00:07Z", "2025-06-01T12:00:07.5Z", "2025-06-01T14:00:07+02:00",
		"9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z", "2025-06-01 12:00:07Z", "2025-13-01T00:00:00Z", "7", ""} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, v string, nowOffset int64) {
		now := testNow.Add(time.Duration(nowOffset))
		d, ok := ParseAnthropicReset(v, now)
		if d < 0 || !ok && d != 0 {
			t.Fatalf("ParseAnthropicReset(%q) = %v, %v", v, d, ok)
		}
		at, err := time.Parse(time.RFC3339, trimOWS(v))
		if ok != (err == nil) {
			t.Fatalf("ParseAnthropicReset(%q) ok = %v; time.Parse error %v", v, ok, err)
		}
		if ok && d != max(at.Sub(now), 0) {
			t.Fatalf("ParseAnthropicReset(%q) = %v; want %v", v, d, max(at.Sub(now), 0))
		}
	})
}

// fuzzHeader turns "Key: value" lines into a header, canonicalizing keys as
// net/http does.
func fuzzHeader(raw string) http.Header {
	h := http.Header{}
	for _, line := range strings.Split(raw, "\n") {
		k, v, found := strings.Cut(line, ":")
		if k = strings.TrimSpace(k); found && k != "" {
			h.Add(k, v)
		}
	}
	return h
}

func FuzzParse(f *testing.F) {
	seeds := []string{
		"Date: Sun, 01 Jun 2025 12:00:00 GMT\nRetry-After: 120\nRetry-After-Ms: 1500\nX-Should-Retry: true",
		"Retry-After: Sun, 01 Jun 2025 12:02:00 GMT\nDate: Sun, 01 Jun 2025 11:00:00 GMT",
		"x-ratelimit-limit-requests: 60\nx-ratelimit-limit-tokens: 150000\nx-ratelimit-remaining-requests: 59\nx-ratelimit-remaining-tokens: 149984\nx-ratelimit-reset-requests: 1s\nx-ratelimit-reset-tokens: 6m0s",
		"anthropic-ratelimit-tokens-limit: 80000\nanthropic-ratelimit-tokens-remaining: 0\nanthropic-ratelimit-tokens-reset: 2025-06-01T12:00:07Z",
		"RateLimit-Policy: \"permin\";q=50;w=60, \"perday\";q=1000;w=86400\nRateLimit: \"permin\";r=0;t=30\nRateLimit: \"perday\";r=3",
		"X-RateLimit-Limit: 5\nX-RateLimit-Remaining: 0\nX-RateLimit-Reset: 1748779201.500\nX-RateLimit-Reset-After: 64.57",
		"x-rate-limit-reset: 99999999999\nRateLimit-Limit: 10, 10;w=1\nRateLimit-Reset: 1e9",
		"Retry-After: 5\nRetry-After: 6\nX-RateLimit-Remaining: 10, 10\nStripe-Should-Retry: false\nX-Shopify-Shop-Api-Call-Limit: 32/40",
		"x-ratelimit-limit: 30\nx-ratelimit-remaining: 29\nx-ratelimit-reset: 1748779260\nx-ratelimit-resource: code_search",
	}
	for _, s := range seeds {
		f.Add(s, int64(time.Hour), int64(0))
	}
	f.Add(seeds[0], int64(0), int64(-time.Hour))
	f.Fuzz(func(t *testing.T, raw string, maxPause, nowOffset int64) {
		h := fuzzHeader(raw)
		now := testNow.Add(time.Duration(nowOffset))
		limit := time.Duration(maxPause)
		s := Parse(h, now, limit)
		inRange := func(d time.Duration) bool { return d >= 0 && (limit <= 0 || d <= limit) }
		if !inRange(s.RetryAfter) || !s.HasRetryAfter && s.RetryAfter != 0 {
			t.Fatalf("RetryAfter %v (has %v) out of range, maxPause %v", s.RetryAfter, s.HasRetryAfter, limit)
		}
		if s.Capped && limit <= 0 {
			t.Fatalf("Capped without a cap")
		}
		var prev Family
		for _, q := range s.Quotas {
			if q.Family < prev || q.Family < FamilyIETF || q.Family > FamilyShopify {
				t.Fatalf("family %v out of order in %+v", q.Family, s.Quotas)
			}
			prev = q.Family
			if q.Limit < -1 || q.Remaining < -1 || q.Reset != -1 && !inRange(q.Reset) || q.Window < -1 || q.Window == 0 {
				t.Fatalf("invalid quota %+v, maxPause %v", q, limit)
			}
			if q.Resource != "" && (q.Family != FamilyXRateLimit || len(q.Resource) > 64 || strings.ContainsAny(q.Resource, " ,;\"\t")) {
				t.Fatalf("resource %q of %+v", q.Resource, q)
			}
			if q.Limit == -1 && q.Remaining == -1 && q.Reset == -1 {
				t.Fatalf("empty quota %+v", q)
			}
		}
		seen := map[string]bool{}
		for _, k := range s.Malformed {
			if seen[k] || len(h[k]) == 0 {
				t.Fatalf("Malformed %q: repeated or not in the header %v", s.Malformed, h)
			}
			seen[k] = true
		}
		if again := Parse(h, now, limit); !reflect.DeepEqual(again, s) {
			t.Fatalf("Parse is not deterministic: %s then %s", dump(s), dump(again))
		}
	})
}
