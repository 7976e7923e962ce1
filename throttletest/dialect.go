package throttletest

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/internal/headers"
)

// writeHeaders writes the quota status in the vendor's dialect.
func (s *Server) writeHeaders(h http.Header, st []throttle.LimitStatus) {
	now := s.clock.Now()
	headers.SetDate(h, now)
	switch s.cfg.Dialect {
	case IETF:
		httpthrottle.WriteIETF(h, st)
	case XRateLimit, XRateLimitEpoch:
		q := st[0]
		for _, x := range st {
			if x.Name == "requests" {
				q = x
			}
		}
		headers.SetXRateLimit(h, q.Capacity, q.Remaining, q.Reset, s.cfg.Dialect == XRateLimitEpoch, now)
	case OpenAI:
		for _, x := range st {
			headers.SetOpenAI(h, x.Name, x.Capacity, x.Remaining, x.Reset)
		}
	case Anthropic:
		for _, x := range st {
			headers.SetAnthropic(h, x.Name, x.Capacity, x.Remaining, x.Reset, now)
		}
	}
	if s.cfg.GarbageHeaders {
		garble(h)
	}
}

// reject answers a request over the quota: 429, with the dialect's extra
// headers and misbehaviours.
func (s *Server) reject(w http.ResponseWriter, _ *http.Request, wait time.Duration) {
	s.throttled.Add(1)
	h := w.Header()
	if s.cfg.Dialect == OpenAI && wait >= 0 {
		headers.SetRetryAfterMs(h, wait)
	}
	if s.cfg.HugeRetryAfter {
		h.Del("Retry-After-Ms")
		h.Set("Retry-After", "1000000")
	}
	if s.cfg.GarbageHeaders {
		garble(h)
	}
	writeError(w, s.cfg.Dialect, http.StatusTooManyRequests, "rate_limit_error", "rate limit reached; slow down")
}

// setRetryAfter writes Retry-After on a 503.
func (s *Server) setRetryAfter(h http.Header, d time.Duration) {
	headers.SetRetryAfter(h, d)
	if s.cfg.GarbageHeaders {
		garble(h)
	}
}

// garbage are malformed values for every rate-limit field: not a count, a
// delay, a duration, a date nor a structured field a parser may accept.
var garbage = [...]string{"soon", "-5", "NaN", "1e", "½", "0x1F", "tomorrow"}

// garble replaces the value of every rate-limit field in h with garbage.
func garble(h http.Header) {
	var keys []string
	for k := range h {
		if isRateLimitField(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for i, k := range keys {
		h[k] = []string{garbage[i%len(garbage)]}
	}
}

func isRateLimitField(k string) bool {
	for _, p := range [...]string{"Ratelimit", "X-Ratelimit", "Anthropic-Ratelimit", "Retry-After"} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}
