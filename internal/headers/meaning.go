package headers

import (
	"net/http"
	"strconv"
	"time"
)

// StatusOverloaded is Anthropic's 529: the service is overloaded.
const StatusOverloaded = 529

// Throttled reports whether a response of status with these signals says
// the client went over a quota: a 429; a 403 with a remaining count of 0 (GitHub's primary rate
// limit) or with Retry-After (GitHub's secondary limits, whose wait
// the client supplies when the server named none); or a 503 or 529 with
// Retry-After.
func (sig *Signals) Throttled(status int) bool {
	switch status {
	case http.StatusTooManyRequests:
		return true
	case http.StatusForbidden:
		if sig.HasRetryAfter {
			return true
		}
		for _, q := range sig.Quotas {
			if q.Remaining == 0 {
				return true
			}
		}
	case http.StatusServiceUnavailable, StatusOverloaded:
		return sig.HasRetryAfter
	}
	return false
}

// ServerWait is how long a response of status asked the client to hold
// off: its Retry-After, or for a 429 or 403 without one, the longest reset
// of the quotas it reports exhausted.
func (sig *Signals) ServerWait(status int) (time.Duration, bool) {
	if status == http.StatusTooManyRequests || status == http.StatusForbidden {
		return sig.Pause()
	}
	return sig.RetryAfter, sig.HasRetryAfter
}

// Cause says what asked for a pause of d after a refusal with status from
// host, for a WaitError's Cause and a status page: the status, the host
// (never the path or query, which may carry a key) and the header that
// gave the wait, or that none did and the wait is the client's own
// back-off.
func (sig *Signals) Cause(status int, host string, d time.Duration) string {
	var from string
	switch {
	case sig.HasRetryAfter:
		from = "Retry-After " + sig.RetryAfter.String()
	default:
		from = "no usable wait, back-off " + d.String()
		for _, q := range sig.Quotas {
			if w, ok := q.Wait(); ok && q.Remaining == 0 && w == d {
				from = q.Source() + " exhausted, next unit in " + w.String()
				break
			}
		}
	}
	if sig.Capped {
		from += " (capped)"
	}
	return strconv.Itoa(status) + " from " + host + ": " + from
}

// Source names a reported quota as its header family does.
func (q *Quota) Source() string {
	s := q.Family.String()
	if q.Name != "" {
		s += " " + strconv.Quote(q.Name)
	}
	if q.Resource != "" {
		s += " (" + q.Resource + ")"
	}
	return s
}

// RefusedLevel is the level of a limit after a refusal of a call that cost
// c on it: c, or what the server reports remaining of the limit's quota
// (the quotas mine matches) if less. holds reports instead that a quota
// the server reports still holds the call: the limit keeps its level.
func (sig *Signals) RefusedLevel(c int64, mine func(q *Quota) bool) (n int64, holds bool) {
	n = c
	for j := range sig.Quotas {
		q := &sig.Quotas[j]
		if q.Remaining < 0 || !mine(q) {
			continue
		}
		if q.Remaining > 0 && q.Remaining >= c {
			holds = true
			continue
		}
		return min(n, q.MostRemaining()), false
	}
	return n, holds
}
