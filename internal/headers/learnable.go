package headers

import "time"

// Learnable says what limit q teaches a client that learns its limits from
// the server (package auto; a Tuner under the Transport): its name
// ("requests" for an unnamed IETF policy or GitHub's count), the window
// its Limit covers, and whether that Limit is also its burst (exact); ok
// is false for a quota that teaches nothing. OpenAI's and Anthropic's
// limits are per minute, GitHub's per hour (per minute for its "search"
// and "code_search" resources), by the vendors' convention.
func (q *Quota) Learnable() (name string, window time.Duration, exact, ok bool) {
	if q.Limit <= 0 {
		return "", 0, false, false
	}
	switch q.Family {
	case FamilyIETF:
		if q.Unit != "" || q.Window <= 0 {
			return "", 0, false, false
		}
		name = q.Name
		if name == "" {
			name = "requests"
		}
		return name, q.Window, true, true
	case FamilyOpenAI, FamilyAnthropic:
		return q.Name, time.Minute, false, true
	case FamilyXRateLimit:
		switch q.Resource {
		case "":
			return "", 0, false, false
		case "search", "code_search":
			return "requests", time.Minute, true, true
		}
		return "requests", time.Hour, true, true
	}
	return "", 0, false, false
}

// FamilyNamed is the Family whose String is s, 0 for none.
func FamilyNamed(s string) Family {
	for f := FamilyIETF; f <= FamilyShopify; f++ {
		if f.String() == s {
			return f
		}
	}
	return 0
}
