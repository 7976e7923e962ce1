package headers

import (
	"testing"
	"time"
)

func TestParseRefusal(t *testing.T) {
	for _, c := range []struct {
		name string
		body string
		want Refusal
	}{
		{"gemini", `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED",
			"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests"}]},
			{"@type":"type.googleapis.com/google.rpc.Help","links":[{"url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},
			{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"10.689924287s"}]}}`,
			Refusal{RetryDelay: 10689924287, HasRetryDelay: true}},
		{"gemini per day", `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED",
			"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"50"}]},
			{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"43s"}]}}`,
			Refusal{RetryDelay: 43 * time.Second, HasRetryDelay: true, Daily: true}},
		{"gemini per minute", `{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]}]}}`,
			Refusal{}},
		{"gemini stream array", `[{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3s"}]}}]`,
			Refusal{RetryDelay: 3 * time.Second, HasRetryDelay: true}},
		{"gemini capped", `{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3600s"}]}}`,
			Refusal{RetryDelay: time.Minute, HasRetryDelay: true, Capped: true}},
		{"gemini bad delay", `{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"-3s"}]}}`, Refusal{}},
		{"openai insufficient_quota", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			Refusal{Billing: "insufficient_quota"}},
		{"openai old shape", `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":null}}`,
			Refusal{Billing: "insufficient_quota"}},
		{"openai spend limit", `{"error":{"message":"Project spend limit reached.","type":"insufficient_quota","code":"project_spend_limit_exceeded"}}`,
			Refusal{Billing: "project_spend_limit_exceeded"}},
		{"openai rate limit", `{"error":{"message":"Rate limit reached for gpt-4o on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, Refusal{}},
		{"anthropic enforced spend limit", `{"type":"error","error":{"type":"rate_limit_error","message":"Your organization has reached its monthly usage limit.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_01"}`,
			Refusal{Billing: "enforced_spend_limit_reached"}},
		{"anthropic console limit", `{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified workspace API usage limits. You will regain access on 2026-01-01 at 00:00 UTC."}}`,
			Refusal{Billing: "invalid_request_error"}},
		{"anthropic rate limit", `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, Refusal{}},
		{"github secondary", `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits","status":"403"}`,
			Refusal{Secondary: true}},
		{"github abuse", `{"message":"slow down","documentation_url":"https://docs.github.com/rest#abuse-rate-limits"}`, Refusal{Secondary: true}},
		{"github primary", `{"message":"API rate limit exceeded for user ID 1.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"}`, Refusal{}},
		{"github forbidden", `{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest"}`, Refusal{}},
		{"cut short", `{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3s"}`, Refusal{}},
		{"not json", `<html>429 Too Many Requests</html>`, Refusal{}},
		{"empty", ``, Refusal{}},
	} {
		if got := ParseRefusal([]byte(c.body), time.Minute); got != c.want {
			t.Errorf("%s: ParseRefusal = %+v; want %+v", c.name, got, c.want)
		}
	}
}

func TestParseProtoDuration(t *testing.T) {
	for v, want := range map[string]time.Duration{"10s": 10 * time.Second, "10.689924287s": 10689924287, "0.5s": 500 * time.Millisecond, "0s": 0} {
		if d, ok := ParseProtoDuration(v); !ok || d != want {
			t.Errorf("ParseProtoDuration(%q) = %v, %v; want %v", v, d, ok, want)
		}
	}
	for _, v := range []string{"", "s", "10", "-1s", "1m", "1.s", " 1s", "1e3s", "NaNs"} {
		if d, ok := ParseProtoDuration(v); ok {
			t.Errorf("ParseProtoDuration(%q) = %v, true; want false", v, d)
		}
	}
}

func TestMostRemaining(t *testing.T) {
	for _, c := range []struct {
		q    Quota
		want int64
	}{
		{Quota{Family: FamilyAnthropic, Name: "output-tokens", Remaining: 0}, 499},
		{Quota{Family: FamilyAnthropic, Name: "tokens", Remaining: 2000}, 2499},
		{Quota{Family: FamilyAnthropic, Name: "requests", Remaining: 3}, 3},
		{Quota{Family: FamilyOpenAI, Name: "tokens", Remaining: 2000}, 2000},
		{Quota{Family: FamilyAnthropic, Name: "tokens", Remaining: -1}, -1},
	} {
		if got := c.q.MostRemaining(); got != c.want {
			t.Errorf("%+v: MostRemaining = %d; want %d", c.q, got, c.want)
		}
	}
}

// FuzzParseRefusal checks that any body, cut anywhere, gives a Refusal
// within its invariants: a delay never negative and never above the cap,
// Capped only with a delay, and the same answer for the body with spaces
// around it.
func FuzzParseRefusal(f *testing.F) {
	for _, s := range []string{
		`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"10.689924287s"}]}}`,
		`[{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3s"}]}}]`,
		`{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}`,
		`{"type":"error","error":{"type":"rate_limit_error","details":{"error_code":"enforced_spend_limit_reached"}}}`,
		`{"message":"You have exceeded a secondary rate limit.","documentation_url":"https://docs.github.com/rest#about-secondary-rate-limits"}`,
		`{"error":{"code":"x","details":{"error_code":1}}}`, `[]`, `[1]`, `null`, `{"error":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := ParseRefusal(body, time.Minute)
		if r.RetryDelay < 0 || r.RetryDelay > time.Minute || !r.HasRetryDelay && (r.RetryDelay != 0 || r.Capped) {
			t.Fatalf("ParseRefusal(%q) = %+v", body, r)
		}
		padded := append(append([]byte(" \n"), body...), '\t')
		if r2 := ParseRefusal(padded, time.Minute); r2 != r {
			t.Fatalf("surrounding space changed ParseRefusal(%q): %+v then %+v", body, r, r2)
		}
		if u := ParseRefusal(body, 0); u.Capped || u.HasRetryDelay != r.HasRetryDelay || u.RetryDelay < r.RetryDelay {
			t.Fatalf("ParseRefusal(%q) without a cap = %+v; with one %+v", body, u, r)
		}
	})
}

func FuzzParseProtoDuration(f *testing.F) {
	for _, s := range []string{"10s", "10.689924287s", "0.000000001s", "99999999999999999999s", "1.s", "s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := ParseProtoDuration(v)
		if d < 0 || !ok && d != 0 {
			t.Fatalf("ParseProtoDuration(%q) = %v, %v", v, d, ok)
		}
		if ok {
			if back, ok2 := ParseOpenAIReset(v); !ok2 || back != d {
				t.Fatalf("ParseProtoDuration(%q) = %v; as a Go duration %v, %v", v, d, back, ok2)
			}
		}
	})
}
