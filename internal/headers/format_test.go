package headers

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/throttlekit/throttle/internal/fields"
)

func TestSetRetryAfter(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0"},
		{0, "0"},
		{1, "1"},
		{time.Second, "1"},
		{time.Second + 1, "2"},
		{1500 * time.Millisecond, "2"},
		{time.Hour, "3600"},
		{maxDur, "9223372037"},
	}
	for _, c := range cases {
		h := http.Header{}
		SetRetryAfter(h, c.d)
		if got := h.Get("Retry-After"); got != c.want {
			t.Errorf("SetRetryAfter(%v) wrote %q; want %q", c.d, got, c.want)
		}
	}
}

func TestSetRetryAfterMs(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{-1, "0"},
		{0, "0"},
		{1, "1"},
		{1500 * time.Microsecond, "2"},
		{2 * time.Second, "2000"},
	}
	for _, c := range cases {
		h := http.Header{}
		SetRetryAfterMs(h, c.d)
		if got := h.Get("Retry-After-Ms"); got != c.want {
			t.Errorf("SetRetryAfterMs(%v) wrote %q; want %q", c.d, got, c.want)
		}
	}
}

func TestSetIETFWritesTheDraftSyntax(t *testing.T) {
	h := http.Header{}
	SetIETF(h, "default", 100, time.Minute, 50, 29*time.Second+1)
	AddIETF(h, `we"ird\é`, -5, 0, 2e15, -time.Second)
	want := http.Header{
		"Ratelimit-Policy": {`"default";q=100;w=60`, `"we\"ird\\??";q=0`},
		"Ratelimit":        {`"default";r=50;t=30`, `"we\"ird\\??";r=999999999999999;t=0`},
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("got %q; want %q", h, want)
	}
	SetIETF(h, "only", 1, time.Second, 1, time.Second)
	if got := h.Values("RateLimit-Policy"); len(got) != 1 || got[0] != `"only";q=1;w=1` {
		t.Errorf("SetIETF did not replace the earlier policies: %q", got)
	}
}

func TestSetXRateLimitWritesDeltaOrEpoch(t *testing.T) {
	h := http.Header{}
	SetXRateLimit(h, 100, -1, 1500*time.Millisecond, false, testNow)
	want := http.Header{"X-Ratelimit-Limit": {"100"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"2"}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("delta: got %q; want %q", h, want)
	}
	SetXRateLimit(h, 100, 7, 40*365*24*time.Hour, false, testNow)
	if got := h.Get("X-Ratelimit-Reset"); got != "999999999" {
		t.Errorf("delta of 40 years written as %q; want the largest delay that does not read as an epoch", got)
	}
	SetXRateLimit(h, 100, 7, 1500*time.Millisecond, true, testNow)
	want = http.Header{"X-Ratelimit-Limit": {"100"}, "X-Ratelimit-Remaining": {"7"}, "X-Ratelimit-Reset": {"1748779202"}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("epoch: got %q; want %q", h, want)
	}
}

func TestSetOpenAIAndAnthropicWriteVendorSyntax(t *testing.T) {
	h := http.Header{}
	SetOpenAI(h, "tokens", 150000, 149984, 6*time.Minute)
	SetAnthropic(h, "input-tokens", 40000, 39000, 1500*time.Millisecond, testNow)
	SetShouldRetry(h, false)
	SetDate(h, testNow.In(time.FixedZone("CEST", 2*3600)))
	want := http.Header{
		"X-Ratelimit-Limit-Tokens":                   {"150000"},
		"X-Ratelimit-Remaining-Tokens":               {"149984"},
		"X-Ratelimit-Reset-Tokens":                   {"6m0s"},
		"Anthropic-Ratelimit-Input-Tokens-Limit":     {"40000"},
		"Anthropic-Ratelimit-Input-Tokens-Remaining": {"39000"},
		"Anthropic-Ratelimit-Input-Tokens-Reset":     {"2025-06-01T12:00:02Z"},
		"X-Should-Retry":                             {"false"},
		"Date":                                       {"Sun, 01 Jun 2025 12:00:00 GMT"},
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("got %q; want %q", h, want)
	}
}

// TestRoundTrip writes each family with the Set functions and reads it back
// with Parse, no cap in the way. Whole-second formats round up, so the read
// reset is the written one rounded up to the second.
func TestRoundTrip(t *testing.T) {
	resets := []time.Duration{0, time.Nanosecond, 999 * time.Millisecond, time.Second, 1500 * time.Millisecond, 6 * time.Minute, 23*time.Hour + 47*time.Minute + 36648*time.Millisecond}
	counts := [][2]int64{{0, 0}, {1, 0}, {60, 59}, {150000, 149984}, {999999999999999, 1}}
	ceilSec := func(d time.Duration) time.Duration {
		return time.Duration(fields.CeilDiv(d, time.Second)) * time.Second
	}
	const noCap = 0
	for _, reset := range resets {
		for _, c := range counts {
			limit, remaining := c[0], c[1]
			check := func(name string, h http.Header, want Signals) {
				t.Helper()
				if got := Parse(h, testNow, noCap); !reflect.DeepEqual(got, want) {
					t.Errorf("%s(limit %d, remaining %d, reset %v):\n got %s\nwant %s", name, limit, remaining, reset, dump(got), dump(want))
				}
			}

			h := http.Header{}
			SetRetryAfter(h, reset)
			check("SetRetryAfter", h, Signals{RetryAfter: ceilSec(reset), HasRetryAfter: true})

			h = http.Header{}
			SetRetryAfterMs(h, reset)
			SetRetryAfter(h, time.Hour) // Retry-After-Ms takes precedence
			check("SetRetryAfterMs", h, Signals{RetryAfter: time.Duration(fields.CeilDiv(reset, time.Millisecond)) * time.Millisecond, HasRetryAfter: true})

			h = http.Header{}
			SetIETF(h, "default", limit, time.Minute, remaining, reset)
			AddIETF(h, "daily", limit, 24*time.Hour, remaining, reset)
			check("SetIETF", h, Signals{Quotas: []Quota{
				{Family: FamilyIETF, Name: "default", Limit: limit, Remaining: remaining, Reset: ceilSec(reset), Window: time.Minute},
				{Family: FamilyIETF, Name: "daily", Limit: limit, Remaining: remaining, Reset: ceilSec(reset), Window: 24 * time.Hour},
			}})

			for _, epoch := range []bool{false, true} {
				h = http.Header{}
				SetDate(h, testNow)
				SetXRateLimit(h, limit, remaining, reset, epoch, testNow)
				check("SetXRateLimit", h, Signals{Quotas: []Quota{quota(FamilyXRateLimit, "", limit, remaining, ceilSec(reset))}})
			}

			h = http.Header{}
			SetOpenAI(h, "requests", limit, remaining, reset)
			SetOpenAI(h, "tokens", limit, remaining, reset)
			check("SetOpenAI", h, Signals{Quotas: []Quota{
				quota(FamilyOpenAI, "requests", limit, remaining, reset),
				quota(FamilyOpenAI, "tokens", limit, remaining, reset),
			}})

			h = http.Header{}
			SetDate(h, testNow)
			want := Signals{}
			for _, kind := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
				SetAnthropic(h, kind, limit, remaining, reset, testNow)
				want.Quotas = append(want.Quotas, quota(FamilyAnthropic, kind, limit, remaining, ceilSec(reset)))
			}
			SetShouldRetry(h, true)
			want.ShouldRetry = boolPtr(true)
			check("SetAnthropic", h, want)
		}
	}
}

// TestRoundTripSubsecondNow documents the rounding of instants written from a
// now that is not on a whole second: the reset is rounded up to a whole Unix
// second, and Date is truncated to one, so the reset read back is at most 2s
// longer than the one written (1s when measured from now, without Date).
func TestRoundTripSubsecondNow(t *testing.T) {
	now := testNow.Add(900 * time.Millisecond)
	reset := 200 * time.Millisecond // due at 12:00:01.1, written as 12:00:02
	for _, withDate := range []bool{true, false} {
		h := http.Header{}
		if withDate {
			SetDate(h, now) // 12:00:00
		}
		SetXRateLimit(h, 1, 1, reset, true, now)
		SetAnthropic(h, "requests", 1, 1, reset, now)
		want := 2 * time.Second
		if !withDate {
			want = 1100 * time.Millisecond
		}
		s := Parse(h, now, 0)
		for _, q := range s.Quotas {
			if q.Reset != want || q.Reset < reset || q.Reset-reset >= 2*time.Second {
				t.Errorf("Date %v, %v: Reset = %v; want %v", withDate, q.Family, q.Reset, want)
			}
		}
		if len(s.Quotas) != 2 {
			t.Errorf("got %d quotas; want 2", len(s.Quotas))
		}
	}
}
