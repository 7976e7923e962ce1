package headers

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// Refusal is what the JSON error body of a refused request says about the
// refusal, beyond the header.
type Refusal struct {
	// RetryDelay is Google's google.rpc.RetryInfo retryDelay (Gemini and
	// other Google APIs send the wait in the body only); valid when
	// HasRetryDelay. It is never negative and is capped at ParseRefusal's
	// maxPause, setting Capped.
	RetryDelay    time.Duration
	HasRetryDelay bool
	Capped        bool
	// Billing is the vendor's code when the body refuses the account rather
	// than the pace, so that no wait cures it: OpenAI's insufficient_quota,
	// credit_balance_exhausted and the *_spend_limit_exceeded and
	// organization_usage_limit_exceeded codes, Anthropic's
	// enforced_spend_limit_reached and other *_spend_limit_reached codes (in
	// error.details.error_code) or a message about its usage or spend limits.
	// It is "" otherwise.
	Billing string
	// Daily reports a Google QuotaFailure violation of a quota per day (its
	// quotaId says "PerDay", as Gemini's GenerateRequestsPerDay... do): no
	// pause cures it before the day ends, whatever its retryDelay says.
	Daily bool
	// Secondary reports GitHub's secondary rate limit: a documentation_url
	// ending in "secondary-rate-limits" or "#abuse-rate-limits" (as go-github
	// tests it), or a message that says "secondary rate limit".
	Secondary bool
}

// errorBody holds the fields of the vendors' error shapes that matter:
// OpenAI's {"error":{"type","code","message"}}, Anthropic's {"type":"error",
// "error":{"type","message","details":{"error_code"}}}, Google's
// {"error":{"code":429,"status","message","details":[{"@type",
// "retryDelay"}]}}, and GitHub's {"message","documentation_url"}.
type errorBody struct {
	Error *struct {
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"` // a string (OpenAI) or a number (Google)
		Message string          `json:"message"`
		Details json.RawMessage `json:"details"` // an array (Google) or an object (Anthropic)
	} `json:"error"`
	Message          string `json:"message"`
	DocumentationURL string `json:"documentation_url"`
}

type googleDetail struct {
	Type       string `json:"@type"`
	RetryDelay string `json:"retryDelay"`
	Violations []struct {
		QuotaID string `json:"quotaId"`
	} `json:"violations"`
}

const (
	retryInfoType    = "type.googleapis.com/google.rpc.RetryInfo"
	quotaFailureType = "type.googleapis.com/google.rpc.QuotaFailure"
)

// ParseRefusal reads the JSON error body of a refused request: an object,
// or an array whose first element is one (Gemini's streaming endpoints
// answer so). It never fails: a body that is not such JSON, or that was cut
// short, says nothing and gives the zero Refusal. A retryDelay above
// maxPause is lowered to it; maxPause <= 0 means no cap.
func ParseRefusal(body []byte, maxPause time.Duration) Refusal {
	var r Refusal
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(body, &list) != nil || len(list) == 0 {
			return r
		}
		body = list[0]
	}
	var e errorBody
	if json.Unmarshal(body, &e) != nil {
		return r
	}
	r.Secondary = strings.HasSuffix(e.DocumentationURL, "secondary-rate-limits") ||
		strings.HasSuffix(e.DocumentationURL, "#abuse-rate-limits") ||
		containsFold(e.Message, "secondary rate limit")
	if e.Error == nil {
		return r
	}
	var code string
	json.Unmarshal(e.Error.Code, &code) // a number leaves it ""
	r.Billing = billingCode(e.Error.Type, code, e.Error.Message, e.Error.Details)
	if len(e.Error.Details) > 0 && e.Error.Details[0] == '[' {
		var details []googleDetail
		if json.Unmarshal(e.Error.Details, &details) == nil {
			retry := false // the first RetryInfo counts
			for _, d := range details {
				switch {
				case d.Type == quotaFailureType:
					for _, v := range d.Violations {
						r.Daily = r.Daily || strings.Contains(v.QuotaID, "PerDay")
					}
				case d.Type != retryInfoType || retry:
				default:
					retry = true
					if v, ok := ParseProtoDuration(d.RetryDelay); ok {
						if maxPause > 0 && v > maxPause {
							v, r.Capped = maxPause, true
						}
						r.RetryDelay, r.HasRetryDelay = v, true
					}
				}
			}
		}
	}
	return r
}

// billingCode returns the code of an error that refuses the account, or "".
func billingCode(kind, code, message string, details json.RawMessage) string {
	switch code {
	case "insufficient_quota", "credit_balance_exhausted", "organization_spend_limit_exceeded",
		"project_spend_limit_exceeded", "organization_usage_limit_exceeded":
		return code
	}
	if kind == "insufficient_quota" {
		return kind
	}
	if len(details) > 0 && details[0] == '{' {
		var d struct {
			ErrorCode string `json:"error_code"`
		}
		if json.Unmarshal(details, &d) == nil && strings.HasSuffix(d.ErrorCode, "spend_limit_reached") {
			return d.ErrorCode
		}
	}
	// Anthropic's spend limits set in its console: "You have reached your
	// specified API usage limits", "... workspace API usage limits".
	if kind != "" && (containsFold(message, "api usage limits") || containsFold(message, "spend limit")) {
		return kind
	}
	return ""
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), sub)
}

// ParseProtoDuration parses the JSON form of a google.protobuf.Duration:
// seconds with up to nine fractional digits and an "s", such as "10s",
// "10.689924287s" or "0.5s". It saturates at the largest time.Duration and
// rejects signs, other units and surrounding text.
func ParseProtoDuration(v string) (time.Duration, bool) {
	num, ok := strings.CutSuffix(v, "s")
	if !ok || num == "" {
		return 0, false
	}
	dec, ok := parseDecimal(num)
	if !ok {
		return 0, false
	}
	return dec.duration(time.Second), true
}
