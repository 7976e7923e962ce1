package headers

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// header builds an http.Header from key, value pairs, canonicalizing keys as
// net/http does; a key may repeat to send several lines.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func quota(f Family, name string, limit, remaining int64, reset time.Duration) Quota {
	return Quota{Family: f, Name: name, Limit: limit, Remaining: remaining, Reset: reset, Window: -1}
}

func boolPtr(b bool) *bool { return &b }

func TestParse(t *testing.T) {
	const maxPause = time.Hour
	cases := []struct {
		name     string
		h        http.Header
		maxPause time.Duration // maxPause when 0
		want     Signals
	}{
		{name: "empty", h: header(), want: Signals{}},
		{name: "unrelated", h: header("Content-Type", "application/json", "Date", "garbage"), want: Signals{}},
		{
			name: "openai",
			h: header(
				"x-ratelimit-limit-requests", "60",
				"x-ratelimit-limit-tokens", "150000",
				"x-ratelimit-remaining-requests", "59",
				"x-ratelimit-remaining-tokens", "149984",
				"x-ratelimit-reset-requests", "1s",
				"x-ratelimit-reset-tokens", "6m0s",
			),
			want: Signals{Quotas: []Quota{
				quota(FamilyOpenAI, "requests", 60, 59, time.Second),
				quota(FamilyOpenAI, "tokens", 150000, 149984, 6*time.Minute),
			}},
		},
		{
			name: "openai 429 with retry-after-ms precedence",
			h: header(
				"retry-after", "20",
				"retry-after-ms", "1500",
				"x-should-retry", "true",
				"x-ratelimit-remaining-tokens", "0",
				"x-ratelimit-reset-tokens", "23h47m36.648s",
			),
			want: Signals{
				RetryAfter: 1500 * time.Millisecond, HasRetryAfter: true, ShouldRetry: boolPtr(true),
				Quotas: []Quota{quota(FamilyOpenAI, "tokens", -1, 0, maxPause)}, Capped: true,
			},
		},
		{
			name: "malformed retry-after-ms falls back on retry-after",
			h:    header("Retry-After-Ms", "soon", "Retry-After", "3"),
			want: Signals{RetryAfter: 3 * time.Second, HasRetryAfter: true, Malformed: []string{"Retry-After-Ms"}},
		},
		{
			name: "malformed retry-after is reported even when retry-after-ms wins",
			h:    header("Retry-After-Ms", "10", "Retry-After", "-3"),
			want: Signals{RetryAfter: 10 * time.Millisecond, HasRetryAfter: true, Malformed: []string{"Retry-After"}},
		},
		{
			name: "http-date measured from Date, not from the skewed local clock",
			// The client clock is an hour ahead of the server's.
			h:    header("Date", "Sun, 01 Jun 2025 11:00:00 GMT", "Retry-After", "Sun, 01 Jun 2025 11:00:30 GMT"),
			want: Signals{RetryAfter: 30 * time.Second, HasRetryAfter: true},
		},
		{
			name: "http-date without Date is measured from now",
			h:    header("Retry-After", "Sun, 01 Jun 2025 12:00:30 GMT"),
			want: Signals{RetryAfter: 30 * time.Second, HasRetryAfter: true},
		},
		{
			name: "malformed Date: now is used and Date reported",
			h:    header("Date", "yesterday", "Retry-After", "Sun, 01 Jun 2025 12:00:30 GMT"),
			want: Signals{RetryAfter: 30 * time.Second, HasRetryAfter: true, Malformed: []string{"Date"}},
		},
		{
			name: "past date means 0",
			h:    header("Retry-After", "Sun, 01 Jun 2025 11:00:30 GMT"),
			want: Signals{RetryAfter: 0, HasRetryAfter: true},
		},
		{
			name: "the draft's hazard is capped",
			h:    header("Retry-After", "1000000"),
			want: Signals{RetryAfter: maxPause, HasRetryAfter: true, Capped: true},
		},
		{
			name: "1e10 seconds does not overflow",
			h:    header("Retry-After", "10000000000"),
			want: Signals{RetryAfter: maxPause, HasRetryAfter: true, Capped: true},
		},
		{
			name:     "no cap when maxPause <= 0",
			h:        header("Retry-After", "1000000"),
			maxPause: -1,
			want:     Signals{RetryAfter: 1000000 * time.Second, HasRetryAfter: true},
		},
		{
			name: "exactly maxPause is not capped",
			h:    header("Retry-After", "3600"),
			want: Signals{RetryAfter: time.Hour, HasRetryAfter: true},
		},
		{
			name: "fractional retry-after",
			h:    header("Retry-After", "2.0"),
			want: Signals{RetryAfter: 2 * time.Second, HasRetryAfter: true},
		},
		{
			name: "empty and whitespace values are malformed",
			h:    header("Retry-After", "", "X-RateLimit-Remaining", "  "),
			want: Signals{Malformed: []string{"Retry-After", "X-Ratelimit-Remaining"}},
		},
		{
			name: "NaN, Inf and negatives are malformed",
			h:    header("Retry-After", "NaN", "Retry-After-Ms", "Inf", "X-RateLimit-Limit", "-1", "X-RateLimit-Reset", "-5"),
			want: Signals{Malformed: []string{"Retry-After-Ms", "Retry-After", "X-Ratelimit-Limit", "X-Ratelimit-Reset"}},
		},
		{
			name: "identical duplicate lines are accepted",
			h:    header("Retry-After", "5", "Retry-After", " 5 ", "X-RateLimit-Remaining", "10", "X-RateLimit-Remaining", "10"),
			want: Signals{RetryAfter: 5 * time.Second, HasRetryAfter: true, Quotas: []Quota{quota(FamilyXRateLimit, "", -1, 10, -1)}},
		},
		{
			name: "conflicting duplicate lines are malformed",
			h:    header("Retry-After", "5", "Retry-After", "6", "X-RateLimit-Remaining", "10", "X-RateLimit-Remaining", "9", "X-RateLimit-Limit", "100"),
			want: Signals{Quotas: []Quota{quota(FamilyXRateLimit, "", 100, -1, -1)}, Malformed: []string{"Retry-After", "X-Ratelimit-Remaining"}},
		},
		{
			name: "numeric lines joined by a proxy",
			h:    header("X-RateLimit-Remaining", "10, 10", "X-RateLimit-Limit", "100,100", "X-RateLimit-Reset", "5, 6"),
			want: Signals{Quotas: []Quota{quota(FamilyXRateLimit, "", 100, 10, -1)}, Malformed: []string{"X-Ratelimit-Reset"}},
		},
		{
			name: "huge counts saturate",
			h:    header("X-RateLimit-Limit", "99999999999999999999999", "X-RateLimit-Remaining", "9223372036854775808"),
			want: Signals{Quotas: []Quota{quota(FamilyXRateLimit, "", 1<<63-1, 1<<63-1, -1)}},
		},
		{
			name: "github: epoch reset measured from Date",
			h: header(
				"Date", "Sun, 01 Jun 2025 11:59:00 GMT",
				"x-ratelimit-limit", "5000",
				"x-ratelimit-remaining", "0",
				"x-ratelimit-used", "5000",
				"x-ratelimit-reset", "1748779200", // 12:00:00
				"x-ratelimit-resource", "core",
			),
			want: Signals{Quotas: []Quota{withResource(quota(FamilyXRateLimit, "", 5000, 0, time.Minute), "core")}},
		},
		{
			name: "github: a malformed resource is ignored",
			h: header(
				"x-ratelimit-limit", "30",
				"x-ratelimit-remaining", "29",
				"x-ratelimit-resource", "se arch",
			),
			want: Signals{
				Quotas:    []Quota{{Family: FamilyXRateLimit, Limit: 30, Remaining: 29, Reset: -1, Window: -1}},
				Malformed: []string{"X-Ratelimit-Resource"},
			},
		},
		{
			name: "discord: reset-after wins over the fractional epoch",
			h: header(
				"X-RateLimit-Limit", "5",
				"X-RateLimit-Remaining", "0",
				"X-RateLimit-Reset", "1748779201.500",
				"X-RateLimit-Reset-After", "64.57",
				"X-RateLimit-Bucket", "abcd1234",
			),
			want: Signals{Quotas: []Quota{quota(FamilyXRateLimit, "", 5, 0, 64570*time.Millisecond)}},
		},
		{
			name: "discord: fractional epoch alone",
			h:    header("X-RateLimit-Reset", "1748779201.500", "X-RateLimit-Reset-After", "x"),
			want: Signals{Quotas: []Quota{quota(FamilyXRateLimit, "", -1, -1, 1500*time.Millisecond)}, Malformed: []string{"X-Ratelimit-Reset-After"}},
		},
		{
			name: "x (twitter)",
			h:    header("x-rate-limit-limit", "900", "x-rate-limit-remaining", "899", "x-rate-limit-reset", "1748779500"),
			want: Signals{Quotas: []Quota{quota(FamilyXRateLimitHyphenated, "", 900, 899, 5*time.Minute)}},
		},
		{
			name: "delta reset",
			h:    header("X-RateLimit-Reset", "30"),
			want: Signals{Quotas: []Quota{quota(FamilyXRateLimit, "", -1, -1, 30*time.Second)}},
		},
		{
			name: "epoch reset far ahead is capped",
			h:    header("X-RateLimit-Reset", "99999999999"),
			want: Signals{Quotas: []Quota{quota(FamilyXRateLimit, "", -1, -1, maxPause)}, Capped: true},
		},
		{
			name: "anthropic",
			h: header(
				"Date", "Sun, 01 Jun 2025 12:00:00 GMT",
				"anthropic-ratelimit-requests-limit", "50",
				"anthropic-ratelimit-requests-remaining", "49",
				"anthropic-ratelimit-requests-reset", "2025-06-01T12:00:01Z",
				"anthropic-ratelimit-tokens-limit", "80000",
				"anthropic-ratelimit-tokens-remaining", "80000",
				"anthropic-ratelimit-tokens-reset", "2025-06-01T12:00:00Z",
				"anthropic-ratelimit-input-tokens-limit", "40000",
				"anthropic-ratelimit-input-tokens-remaining", "39000",
				"anthropic-ratelimit-input-tokens-reset", "2025-06-01T12:00:02Z",
				"anthropic-ratelimit-output-tokens-limit", "8000",
				"anthropic-ratelimit-output-tokens-remaining", "0",
				"anthropic-ratelimit-output-tokens-reset", "2025-06-01 12:00:09Z",
			),
			want: Signals{
				Quotas: []Quota{
					quota(FamilyAnthropic, "requests", 50, 49, time.Second),
					quota(FamilyAnthropic, "tokens", 80000, 80000, 0),
					quota(FamilyAnthropic, "input-tokens", 40000, 39000, 2*time.Second),
					quota(FamilyAnthropic, "output-tokens", 8000, 0, -1),
				},
				Malformed: []string{"Anthropic-Ratelimit-Output-Tokens-Reset"},
			},
		},
		{
			name: "ietf: policies and limits merged by name, capped",
			h: header(
				"RateLimit-Policy", `"permin";q=50;w=60, "perday";q=1000;w=86400`,
				"RateLimit", `"perday";r=3;t=80000, "permin";r=0;t=30, "burst";r=5`,
			),
			want: Signals{Capped: true, Quotas: []Quota{
				{Family: FamilyIETF, Name: "permin", Limit: 50, Remaining: 0, Reset: 30 * time.Second, Window: time.Minute},
				{Family: FamilyIETF, Name: "perday", Limit: 1000, Remaining: 3, Reset: maxPause, Window: 24 * time.Hour},
				{Family: FamilyIETF, Name: "burst", Limit: -1, Remaining: 5, Reset: -1, Window: -1},
			}},
		},
		{
			name: "ietf: several lines form one list",
			h: header(
				"RateLimit-Policy", `"a";q=1`,
				"RateLimit-Policy", `"b";q=2;w=10`,
				"RateLimit", `"b";r=1`,
				"RateLimit", `"a";r=0;t=4`,
			),
			want: Signals{Quotas: []Quota{
				{Family: FamilyIETF, Name: "a", Limit: 1, Remaining: 0, Reset: 4 * time.Second, Window: -1},
				{Family: FamilyIETF, Name: "b", Limit: 2, Remaining: 1, Reset: -1, Window: 10 * time.Second},
			}},
		},
		{
			name: "ietf: a broken line is ignored, the others kept",
			h: header(
				"RateLimit-Policy", `"a";q=1`,
				"RateLimit-Policy", `"b";q=2,`,
				"RateLimit-Policy", `"a";q=9`,
				"RateLimit", `"a";r=0, "a";r=1`,
			),
			want: Signals{
				Quotas:    []Quota{{Family: FamilyIETF, Name: "a", Limit: 1, Remaining: 0, Reset: -1, Window: -1}},
				Malformed: []string{"Ratelimit-Policy", "Ratelimit"},
			},
		},
		{
			name: "ietf: retry-after and t both kept; Pause prefers retry-after",
			h:    header("Retry-After", "10", "RateLimit", `"default";r=0;t=30`),
			want: Signals{RetryAfter: 10 * time.Second, HasRetryAfter: true, Quotas: []Quota{
				{Family: FamilyIETF, Name: "default", Limit: -1, Remaining: 0, Reset: 30 * time.Second, Window: -1},
			}},
		},
		{
			name: "ietf legacy, draft -03 policy list in RateLimit-Limit",
			h:    header("RateLimit-Limit", "10, 10;w=1, 50;w=60", "RateLimit-Remaining", "9", "RateLimit-Reset", "1"),
			want: Signals{Quotas: []Quota{quota(FamilyIETFLegacy, "", 10, 9, time.Second)}},
		},
		{
			name: "ietf legacy epoch reset",
			h:    header("RateLimit-Reset", "1748779210"),
			want: Signals{Quotas: []Quota{quota(FamilyIETFLegacy, "", -1, -1, 10*time.Second)}},
		},
		{
			name: "x-should-retry wins over Stripe-Should-Retry",
			h:    header("X-Should-Retry", "false", "Stripe-Should-Retry", "true"),
			want: Signals{ShouldRetry: boolPtr(false)},
		},
		{
			name: "malformed x-should-retry leaves Stripe's verdict",
			h:    header("X-Should-Retry", "maybe", "Stripe-Should-Retry", "true"),
			want: Signals{ShouldRetry: boolPtr(true), Malformed: []string{"X-Should-Retry"}},
		},
		{
			name: "shopify",
			h:    header("X-Shopify-Shop-Api-Call-Limit", "32/40", "Retry-After", "2.0"),
			want: Signals{RetryAfter: 2 * time.Second, HasRetryAfter: true, Quotas: []Quota{quota(FamilyShopify, "", 40, 8, -1)}},
		},
		{
			name: "shopify over the bucket",
			h:    header("X-Shopify-Shop-Api-Call-Limit", "41/40"),
			want: Signals{Quotas: []Quota{quota(FamilyShopify, "", 40, 0, -1)}},
		},
		{
			name: "families come in a fixed order whatever the header order",
			h: header(
				"X-Shopify-Shop-Api-Call-Limit", "1/2",
				"anthropic-ratelimit-tokens-limit", "1",
				"anthropic-ratelimit-requests-limit", "1",
				"x-ratelimit-limit-tokens", "1",
				"x-ratelimit-limit-requests", "1",
				"x-rate-limit-limit", "1",
				"x-ratelimit-limit", "1",
				"ratelimit-limit", "1",
				"ratelimit-policy", `"p";q=1`,
			),
			want: Signals{Quotas: []Quota{
				{Family: FamilyIETF, Name: "p", Limit: 1, Remaining: -1, Reset: -1, Window: -1},
				quota(FamilyIETFLegacy, "", 1, -1, -1),
				quota(FamilyXRateLimit, "", 1, -1, -1),
				quota(FamilyXRateLimitHyphenated, "", 1, -1, -1),
				quota(FamilyOpenAI, "requests", 1, -1, -1),
				quota(FamilyOpenAI, "tokens", 1, -1, -1),
				quota(FamilyAnthropic, "requests", 1, -1, -1),
				quota(FamilyAnthropic, "tokens", 1, -1, -1),
				quota(FamilyShopify, "", 2, 1, -1),
			}},
		},
		{
			name: "a field malformed several ways is listed once",
			h:    header("Date", "x", "Retry-After", "Sun, 01 Jun 2025 12:00:30 GMT", "X-RateLimit-Reset", "1748779230", "X-RateLimit-Limit", "a"),
			want: Signals{
				RetryAfter: 30 * time.Second, HasRetryAfter: true,
				Quotas:    []Quota{quota(FamilyXRateLimit, "", -1, -1, 30*time.Second)},
				Malformed: []string{"Date", "X-Ratelimit-Limit"},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mp := c.maxPause
			if mp == 0 {
				mp = maxPause
			}
			got := Parse(c.h, testNow, mp)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Parse(%v)\n got %s\nwant %s", c.h, dump(got), dump(c.want))
			}
			// A large header is not scanned for families: same result.
			big := c.h.Clone()
			if big == nil {
				big = http.Header{}
			}
			for i := range 30 {
				big.Set(fmt.Sprintf("X-Filler-%d", i), "1")
			}
			if got := Parse(big, testNow, mp); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Parse(%v with 30 more fields)\n got %s\nwant %s", c.h, dump(got), dump(c.want))
			}
		})
	}
}

func dump(s Signals) string {
	sr := "nil"
	if s.ShouldRetry != nil {
		sr = map[bool]string{true: "true", false: "false"}[*s.ShouldRetry]
	}
	return fmt.Sprintf("{RetryAfter:%v Has:%v Capped:%v ShouldRetry:%s Quotas:%+v Malformed:%q}",
		s.RetryAfter, s.HasRetryAfter, s.Capped, sr, s.Quotas, s.Malformed)
}

func TestParseIgnoresNonCanonicalKeys(t *testing.T) {
	h := http.Header{"retry-after": {"5"}}
	if got := Parse(h, testNow, time.Hour); got.HasRetryAfter {
		t.Errorf("Parse read a non-canonical key: %s", dump(got))
	}
}

func TestCanonicalKeys(t *testing.T) {
	// Parse indexes the map with literal keys; they must be what net/http
	// makes of the names servers send.
	for _, name := range []string{
		"retry-after", "retry-after-ms", "x-should-retry", "stripe-should-retry",
		"ratelimit-policy", "ratelimit", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset",
		"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "x-ratelimit-reset-after",
		"x-rate-limit-limit", "x-rate-limit-remaining", "x-rate-limit-reset",
		"x-ratelimit-limit-requests", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens",
		"anthropic-ratelimit-output-tokens-reset", "x-shopify-shop-api-call-limit",
	} {
		h := http.Header{}
		h.Set(name, "garbage!")
		s := Parse(h, testNow, time.Hour)
		if len(s.Malformed) != 1 || s.Malformed[0] != http.CanonicalHeaderKey(name) {
			t.Errorf("%s: Malformed = %q; want [%q]", name, s.Malformed, http.CanonicalHeaderKey(name))
		}
	}
}

func TestSignalsPause(t *testing.T) {
	cases := []struct {
		name string
		s    Signals
		want time.Duration
		ok   bool
	}{
		{"nothing", Signals{}, 0, false},
		{"retry-after wins", Signals{RetryAfter: 5 * time.Second, HasRetryAfter: true, Quotas: []Quota{quota(FamilyOpenAI, "tokens", 10, 0, time.Minute)}}, 5 * time.Second, true},
		{"retry-after 0", Signals{HasRetryAfter: true}, 0, true},
		{"longest exhausted wait", Signals{Quotas: []Quota{
			quota(FamilyOpenAI, "requests", 10, 0, time.Second),
			quota(FamilyOpenAI, "tokens", 10, 0, time.Minute),
			quota(FamilyAnthropic, "tokens", 10, 1, time.Hour),
		}}, 6 * time.Second, true},
		// OpenAI's reset is the time until the bucket is full: one request
		// of 600 a minute comes back in a tenth of a second, not a minute.
		{"openai reset is to full", Signals{Quotas: []Quota{quota(FamilyOpenAI, "requests", 600, 0, time.Minute)}}, 100 * time.Millisecond, true},
		{"anthropic reset is to full", Signals{Quotas: []Quota{quota(FamilyAnthropic, "input-tokens", 3, 0, time.Second)}}, 333333334, true},
		{"openai without a limit", Signals{Quotas: []Quota{quota(FamilyOpenAI, "requests", -1, 0, time.Minute)}}, 0, false},
		{"window reset is the wait", Signals{Quotas: []Quota{
			quota(FamilyXRateLimit, "", 5000, 0, 40*time.Minute),
			quota(FamilyIETF, "p", 100, 0, 30*time.Second),
		}}, 40 * time.Minute, true},
		{"exhausted without reset", Signals{Quotas: []Quota{quota(FamilyXRateLimit, "", 10, 0, -1)}}, 0, false},
		{"exhausted with reset 0", Signals{Quotas: []Quota{quota(FamilyXRateLimit, "", 10, 0, 0)}}, 0, true},
		{"not exhausted", Signals{Quotas: []Quota{quota(FamilyXRateLimit, "", 10, 3, time.Second)}}, 0, false},
	}
	for _, c := range cases {
		got, ok := c.s.Pause()
		if got != c.want || ok != c.ok {
			t.Errorf("%s: Pause() = %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestFamilyString(t *testing.T) {
	want := []string{"unknown", "ietf", "ietf-legacy", "x-ratelimit", "x-rate-limit", "openai", "anthropic", "shopify", "unknown"}
	for f := range Family(len(want)) {
		if got := f.String(); got != want[f] {
			t.Errorf("Family(%d).String() = %q; want %q", f, got, want[f])
		}
	}
}

func withResource(q Quota, resource string) Quota {
	q.Resource = resource
	return q
}
