package headers

import (
	"testing"
	"time"
)

type durationCase struct {
	in   string
	want time.Duration
	ok   bool
}

func checkDurations(t *testing.T, name string, parse func(string) (time.Duration, bool), cases []durationCase) {
	t.Helper()
	for _, c := range cases {
		got, ok := parse(c.in)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("%s(%q) = %v, %v; want %v, %v", name, c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestUnixOfTestNow(t *testing.T) {
	if got := testNow.Unix(); got != 1748779200 {
		t.Fatalf("testNow.Unix() = %d; the expectations below assume 1748779200", got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	checkDurations(t, "ParseRetryAfter", func(v string) (time.Duration, bool) { return ParseRetryAfter(v, testNow) }, []durationCase{
		{"120", 120 * time.Second, true},
		{" 120 ", 120 * time.Second, true},
		{"\t5\t", 5 * time.Second, true},
		{"0", 0, true},
		{"007", 7 * time.Second, true},
		{"2.0", 2 * time.Second, true},
		{"0.1", 100 * time.Millisecond, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"0.0000000019", 1, true}, // truncated to the nanosecond
		{"0.1234567891234567891234", 123456789, true},
		{"9223372036", 9223372036 * time.Second, true},
		{"9223372036.854775807", maxDur, true},
		{"9223372036.854775808", maxDur, true}, // saturates instead of wrapping
		{"9223372037", maxDur, true},
		{"10000000000", maxDur, true}, // 1e10 s * time.Second would overflow
		{"99999999999999999999999999999", maxDur, true},
		// HTTP-dates in the three formats, measured from now.
		{"Sun, 01 Jun 2025 12:02:00 GMT", 2 * time.Minute, true},
		{"Sunday, 01-Jun-25 12:02:00 GMT", 2 * time.Minute, true},
		{"Sun Jun  1 12:02:00 2025", 2 * time.Minute, true},
		{"  Sun, 01 Jun 2025 12:00:01 GMT  ", time.Second, true},
		{"Sun, 01 Jun 2025 12:00:00 GMT", 0, true},
		{"Sat, 31 May 2025 12:00:00 GMT", 0, true}, // past: 0, never negative
		{"Thu, 01 Jan 1970 00:00:00 GMT", 0, true},
		{"Fri, 31 Dec 9999 23:59:59 GMT", maxDur, true},
		// Malformed.
		{"", 0, false},
		{"   ", 0, false},
		{"-1", 0, false},
		{"-0", 0, false},
		{"+1", 0, false},
		{"1e3", 1000 * time.Second, true},
		{"1.5E-1", 150 * time.Millisecond, true},
		{"1e+2", 100 * time.Second, true},
		{"1e20", maxDur, true}, // as 100000000000000000000 above
		{"1e999999999999", maxDur, true},
		{"0e999999999999", 0, true},
		{"5e-999999999999", 0, true},
		{"1e", 0, false},
		{"e3", 0, false},
		{"1e3.5", 0, false},
		{"-1e3", 0, false},
		{"1e--3", 0, false},
		{"NaN", 0, false},
		{"nan", 0, false},
		{"Inf", 0, false},
		{"+Inf", 0, false},
		{"0x10", 0, false},
		{"1_000", 0, false},
		{"1.", 0, false},
		{".5", 0, false},
		{"1.2.3", 0, false},
		{"12 s", 0, false},
		{"12s", 0, false},
		{"1,000", 0, false},
		{"120, 120", 0, false},
		{"abc", 0, false},
		{"\x00", 0, false},
		{"１２", 0, false}, // full-width digits
		{"Sun, 32 Jun 2025 12:00:00 GMT", 0, false},
		{"2025-06-01T12:00:00Z", 0, false},
	})
}

func TestParseRetryAfterMs(t *testing.T) {
	checkDurations(t, "ParseRetryAfterMs", ParseRetryAfterMs, []durationCase{
		{"1500", 1500 * time.Millisecond, true},
		{" 20.5 ", 20500 * time.Microsecond, true},
		{"0", 0, true},
		{"0.000001", time.Nanosecond, true},
		{"9223372036854", 9223372036854 * time.Millisecond, true},
		{"9223372036855", maxDur, true},
		{"1e400", maxDur, true},
		{"2.5e3", 2500 * time.Millisecond, true},
		{"", 0, false},
		{"-1", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"1ms", 0, false},
	})
}

func TestParseXRateLimitReset(t *testing.T) {
	checkDurations(t, "ParseXRateLimitReset", func(v string) (time.Duration, bool) { return ParseXRateLimitReset(v, testNow) }, []durationCase{
		// Below 1e9: a delay in seconds.
		{"30", 30 * time.Second, true},
		{"0", 0, true},
		{"0.5", 500 * time.Millisecond, true},
		{" 60 ", time.Minute, true},
		{"999999999", 999999999 * time.Second, true},
		// From 1e9 on: a Unix instant, measured from now (1748779200).
		{"1000000000", 0, true}, // 2001: in the past
		{"1748779230", 30 * time.Second, true},
		{"1748779230.250", 30250 * time.Millisecond, true}, // Discord's fractional epoch
		{"1748779200", 0, true},
		{"1748779100", 0, true},
		{"10000000000", 8251220800 * time.Second, true}, // year 2286
		{"20000000000", maxDur, true},                   // further than a Duration reaches
		{"1099511627776", maxDur, true},
		{"99999999999999999999", maxDur, true},
		// Malformed.
		{"", 0, false},
		{"-5", 0, false},
		{"1e9", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"+5", 0, false},
		{"5s", 0, false},
		{"abc", 0, false},
		{"Sun, 01 Jun 2025 12:02:00 GMT", 0, false},
	})
}

func TestParseResetAfter(t *testing.T) {
	checkDurations(t, "ParseResetAfter", ParseResetAfter, []durationCase{
		{"64.57", 64570 * time.Millisecond, true},
		{"1", time.Second, true},
		{"0.001", time.Millisecond, true},
		{"1748779230", 1748779230 * time.Second, true}, // always a delay
		{"99999999999", maxDur, true},
		{"", 0, false},
		{"-1.5", 0, false},
		{"NaN", 0, false},
	})
}

func TestParseAnthropicReset(t *testing.T) {
	checkDurations(t, "ParseAnthropicReset", func(v string) (time.Duration, bool) { return ParseAnthropicReset(v, testNow) }, []durationCase{
		{"2025-06-01T12:00:07Z", 7 * time.Second, true},
		{" 2025-06-01T12:00:07Z ", 7 * time.Second, true},
		{"2025-06-01T12:00:07.5Z", 7500 * time.Millisecond, true},
		{"2025-06-01T14:00:07+02:00", 7 * time.Second, true},
		{"2025-06-01T11:00:00Z", 0, true}, // past
		{"9999-12-31T23:59:59Z", maxDur, true},
		{"", 0, false},
		{"7", 0, false},
		{"1748779207", 0, false},
		{"2025-06-01 12:00:07Z", 0, false},
		{"2025-06-01T12:00:07", 0, false}, // no offset
		{"2025-13-01T00:00:00Z", 0, false},
		{"Sun, 01 Jun 2025 12:02:00 GMT", 0, false},
	})
}

func TestParseOpenAIReset(t *testing.T) {
	checkDurations(t, "ParseOpenAIReset", ParseOpenAIReset, []durationCase{
		{"1s", time.Second, true},
		{"6m0s", 6 * time.Minute, true},
		{"12ms", 12 * time.Millisecond, true},
		{"23h47m36.648s", 23*time.Hour + 47*time.Minute + 36648*time.Millisecond, true},
		{"1.5h", 90 * time.Minute, true},
		{".5s", 500 * time.Millisecond, true},
		{"1.s", time.Second, true},
		{"1us", time.Microsecond, true},
		{"1µs", time.Microsecond, true}, // micro sign
		{"1μs", time.Microsecond, true}, // Greek mu
		{"5ns", 5, true},
		{"1h1h", 2 * time.Hour, true},
		{"0.333333333333333333333h", 1199999999999, true}, // exact, truncated
		{" 2s ", 2 * time.Second, true},
		// A bare number is seconds.
		{"20", 20 * time.Second, true},
		{"0.5", 500 * time.Millisecond, true},
		{"0", 0, true},
		// Saturation instead of the overflow error of time.ParseDuration.
		{"2562047h47m16.854775807s", maxDur, true},
		{"2562047h47m16.854775806s", maxDur - 1, true},
		{"2562048h", maxDur, true},
		{"9223372036854775807ns", maxDur, true},
		{"9223372036854775808ns", maxDur, true},
		{"99999999999999999999999h", maxDur, true},
		{"2562047h2562047h", maxDur, true},
		// Malformed.
		{"", 0, false},
		{"-1s", 0, false},
		{"+1s", 0, false},
		{"-0", 0, false},
		{"1x", 0, false},
		{"s", 0, false},
		{".s", 0, false},
		{"1.5.5s", 0, false},
		{"1 s", 0, false},
		{"1e3s", 0, false},
		{"1sm", 0, false},
		{"1h-5m", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"1S", 0, false},
	})
}

func TestParseCount(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"100", 100, true},
		{" 100\t", 100, true},
		{"0", 0, true},
		{"0007", 7, true},
		{"9223372036854775807", 1<<63 - 1, true},
		{"9223372036854775808", 1<<63 - 1, true}, // saturates
		{"99999999999999999999999", 1<<63 - 1, true},
		{"", 0, false},
		{" ", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.0", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
		{"ten", 0, false},
		{"1 000", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseCount(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseCount(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseShouldRetry(t *testing.T) {
	cases := []struct {
		in        string
		retry, ok bool
	}{
		{"true", true, true},
		{"false", false, true},
		{" TRUE ", true, true},
		{"False", false, true},
		{"", false, false},
		{"1", false, false},
		{"yes", false, false},
		{"true, true", false, false},
	}
	for _, c := range cases {
		retry, ok := ParseShouldRetry(c.in)
		if retry != c.retry || ok != c.ok {
			t.Errorf("ParseShouldRetry(%q) = %v, %v; want %v, %v", c.in, retry, ok, c.retry, c.ok)
		}
	}
}

func TestParseShopifyCallLimit(t *testing.T) {
	cases := []struct {
		in         string
		used, size int64
		ok         bool
	}{
		{"32/40", 32, 40, true},
		{" 1 / 40 ", 1, 40, true},
		{"0/0", 0, 0, true},
		{"41/40", 41, 40, true},
		{"32", 0, 0, false},
		{"/40", 0, 0, false},
		{"32/", 0, 0, false},
		{"-1/40", 0, 0, false},
		{"32/40/50", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, c := range cases {
		used, size, ok := ParseShopifyCallLimit(c.in)
		if used != c.used || size != c.size || ok != c.ok {
			t.Errorf("ParseShopifyCallLimit(%q) = %d, %d, %v; want %d, %d, %v", c.in, used, size, ok, c.used, c.size, c.ok)
		}
	}
}
