// Package throttletest runs a fake rate-limited API vendor on loopback, for
// tests, examples and demos that need no network.
//
// The vendor enforces a request quota and a token quota per API key with
// httpthrottle.Handler; answers OpenAI Chat Completions and Responses,
// Anthropic Messages and Gemini generateContent calls with each API's JSON
// body and usage, or, for a streamed call, with its server-sent events
// (Gemini's streamGenerateContent also as a JSON array sent in pieces);
// refuses a call larger than the token quota as the vendors do ("Request
// too large"); speaks one of several rate-limit header dialects; and can be
// told to misbehave: garbage headers, a huge Retry-After, bursts of 503s,
// slow responses.
package throttletest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/httpthrottle/llm"
)

// Config describes a fake vendor. The zero Config is a vendor without
// limits that speaks the IETF dialect.
type Config struct {
	// Requests is the request quota of each API key: at most RequestBurst
	// requests at once (Requests.Tokens() if zero), refilled at Requests.
	// The zero Rate means no request quota.
	Requests     throttle.Rate
	RequestBurst int64
	// Tokens is the token quota of each API key for LLM calls, with
	// TokenBurst as Requests has RequestBurst. A call reserves its prompt
	// estimate plus its max tokens and is settled against its usage. The
	// zero Rate means no token quota.
	Tokens     throttle.Rate
	TokenBurst int64
	// Dialect selects the rate-limit headers written on every response.
	Dialect Dialect
	// Clock is the vendor's clock; nil means the real one. With a fake
	// clock, the vendor's Date header comes from it too.
	Clock clockwork.Clock
	// ReplyTokens is the completion tokens of each LLM reply, at most the
	// call's max tokens. Zero means 16.
	ReplyTokens int64

	// Latency delays every admitted response, on Clock.
	Latency time.Duration
	// GarbageHeaders replaces the value of every rate-limit header written,
	// Retry-After included, with a malformed one.
	GarbageHeaders bool
	// HugeRetryAfter makes every 429 say Retry-After: 1000000 (11 days).
	HugeRetryAfter bool
	// Outage503Every makes the vendor unavailable for the last
	// Outage503Length (1 if zero) of every Outage503Every requests it
	// receives: those are answered 503 before any quota is spent, with
	// Outage503RetryAfter as Retry-After if positive.
	Outage503Every      int
	Outage503Length     int
	Outage503RetryAfter time.Duration

	// Tokenizer, if set, is how the vendor counts the tokens of a prompt
	// (as llm.Config with this Tokenizer estimates them); nil counts 4
	// characters a token.
	Tokenizer llm.Tokenizer
	// StreamChunkTokens is the tokens of text in each chunk of a streamed
	// reply (a call with "stream": true, or Gemini's
	// :streamGenerateContent); zero means 4. Each token of streamed text is
	// 4 characters.
	StreamChunkTokens int
	// StreamInterval is the time between two chunks of a streamed reply, on
	// Clock.
	StreamInterval time.Duration
	// QuotaExhausted answers every LLM call 429 insufficient_quota without
	// Retry-After, as OpenAI does once an account's credit is spent: a
	// refusal no wait cures.
	QuotaExhausted bool
	// RefuseAllRetryAfter, if positive, answers every LLM call 429
	// rate_limit_exceeded with this Retry-After-Ms (and Retry-After in whole
	// seconds): a quota that stays spent however long the client waits.
	RefuseAllRetryAfter time.Duration
}

// Dialect is a family of rate-limit headers.
type Dialect uint8

// The dialects a vendor can speak.
const (
	// IETF writes RateLimit-Policy and RateLimit, one policy per quota
	// ("requests", "tokens"), as httpthrottle.WriteIETF does.
	IETF Dialect = iota
	// XRateLimit writes X-RateLimit-Limit, -Remaining and -Reset for the
	// request quota, the reset in seconds from now.
	XRateLimit
	// XRateLimitEpoch is XRateLimit with the reset as a Unix time, as
	// GitHub writes it.
	XRateLimitEpoch
	// OpenAI writes x-ratelimit-{limit,remaining,reset}-{requests,tokens},
	// the reset as a Go duration, and Retry-After-Ms with Retry-After on a
	// 429.
	OpenAI
	// Anthropic writes
	// anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}, the
	// reset as an RFC 3339 instant.
	Anthropic
)

// String returns the dialect's name, as ParseDialect reads it.
func (d Dialect) String() string {
	switch d {
	case IETF:
		return "ietf"
	case XRateLimit:
		return "x-ratelimit"
	case XRateLimitEpoch:
		return "x-ratelimit-epoch"
	case OpenAI:
		return "openai"
	case Anthropic:
		return "anthropic"
	}
	return fmt.Sprintf("Dialect(%d)", uint8(d))
}

// ParseDialect returns the dialect named s, as Dialect.String writes it.
func ParseDialect(s string) (Dialect, error) {
	for d := IETF; d <= Anthropic; d++ {
		if strings.EqualFold(s, d.String()) {
			return d, nil
		}
	}
	return 0, fmt.Errorf("throttletest: unknown dialect %q (want ietf, x-ratelimit, x-ratelimit-epoch, openai or anthropic)", s)
}

// Stats counts what a vendor did since it started.
type Stats struct {
	Requests    int64 // requests received
	Admitted    int64 // requests the quota admitted
	Throttled   int64 // requests answered 429
	Unavailable int64 // requests answered 503 by an outage
	Tokens      int64 // tokens used by admitted LLM calls
	TooLarge    int64 // LLM calls refused as larger than the token quota
	MaxInFlight int64 // most requests handled at once
}

// Server is a fake vendor listening on a loopback address.
type Server struct {
	// URL is the base URL of the vendor, http://127.0.0.1:port, with no
	// trailing slash. An OpenAI client takes URL+"/v1/" as its base URL.
	URL string

	cfg     Config
	clock   clockwork.Clock
	srv     *httptest.Server
	handler http.Handler
	keys    *throttle.Keyed[string]

	seq, requests, admitted, throttled, unavailable, tokens atomic.Int64
	tooLarge                                                atomic.Int64
	inflight, maxInflight                                   atomic.Int64
}

// NewServer starts a fake vendor on a loopback address; Close stops it. It
// panics if the quotas are invalid (a negative rate or burst), as
// httptest.NewServer panics when it cannot listen.
func NewServer(cfg Config) *Server {
	s := newServer(cfg)
	s.srv = httptest.NewServer(s.handler)
	s.URL = s.srv.URL
	return s
}

// NewHandler returns the handler of a fake vendor, to serve it in a server
// of one's own (or wrap it, to record requests); the returned Server has no
// URL and nothing to close, but counts Stats.
func NewHandler(cfg Config) (*Server, http.Handler) {
	s := newServer(cfg)
	return s, s.handler
}

func newServer(cfg Config) *Server {
	s := &Server{cfg: cfg, clock: cfg.Clock}
	if s.clock == nil {
		s.clock = clockwork.NewRealClock()
	}
	limits := cfg.limits()
	for _, l := range limits {
		if _, err := throttle.New(l.Capacity, l.Rate); err != nil {
			panic(fmt.Sprintf("throttletest: quota %q: %v", l.Name, err))
		}
	}
	// Without quotas the API is served as it is: Handler has no
	// unlimited default.
	var api http.Handler = http.HandlerFunc(s.serveAPI)
	if len(limits) > 0 {
		var opts []throttle.Option
		if cfg.Clock != nil {
			opts = append(opts, throttle.WithClock(cfg.Clock))
		}
		s.keys = throttle.NewKeyed(func(string) []throttle.Limit { return limits }, opts...)
		api = httpthrottle.Handler(api, httpthrottle.PerKey(s.keys, APIKey),
			httpthrottle.WithCost(s.cost),
			httpthrottle.WithQuotaHeaders(s.writeHeaders),
			httpthrottle.WithRejected(s.reject))
	}
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		n := s.inflight.Add(1)
		defer s.inflight.Add(-1)
		for m := s.maxInflight.Load(); n > m && !s.maxInflight.CompareAndSwap(m, n); m = s.maxInflight.Load() {
		}
		if s.outage() {
			s.unavailable.Add(1)
			if cfg.Outage503RetryAfter > 0 {
				s.setRetryAfter(w.Header(), cfg.Outage503RetryAfter)
			}
			writeError(w, cfg.Dialect, http.StatusServiceUnavailable, "overloaded_error", "the service is temporarily unavailable")
			return
		}
		if s.refuseExhausted(w, r) || s.refuseTooLarge(w, r) {
			return
		}
		api.ServeHTTP(w, r)
	})
	return s
}

// limits returns the quotas of one API key.
func (c *Config) limits() []throttle.Limit {
	var ls []throttle.Limit
	if c.Requests != (throttle.Rate{}) {
		ls = append(ls, throttle.Limit{Name: "requests", Capacity: burst(c.RequestBurst, c.Requests), Rate: c.Requests})
	}
	if c.Tokens != (throttle.Rate{}) {
		ls = append(ls, throttle.Limit{Name: "tokens", Capacity: burst(c.TokenBurst, c.Tokens), Rate: c.Tokens})
	}
	return ls
}

func burst(b int64, r throttle.Rate) int64 {
	if b != 0 {
		return b
	}
	return r.Tokens()
}

// outage reports whether the request just received falls in a 503 burst.
func (s *Server) outage() bool {
	every := int64(s.cfg.Outage503Every)
	if every <= 0 {
		return false
	}
	length := int64(max(s.cfg.Outage503Length, 1))
	n := s.seq.Add(1)
	return (n-1)%every >= every-length
}

// Close shuts the vendor down, closing its connections.
func (s *Server) Close() {
	if s.srv != nil {
		s.srv.Close()
	}
}

// Stats returns the vendor's counters.
func (s *Server) Stats() Stats {
	return Stats{
		Requests:    s.requests.Load(),
		Admitted:    s.admitted.Load(),
		Throttled:   s.throttled.Load(),
		Unavailable: s.unavailable.Load(),
		Tokens:      s.tokens.Load(),
		TooLarge:    s.tooLarge.Load(),
		MaxInFlight: s.maxInflight.Load(),
	}
}

// APIKey returns the API key of a request: the bearer token of its
// Authorization header, else its X-Api-Key header (Anthropic's), else "".
func APIKey(r *http.Request) string {
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	return r.Header.Get("X-Api-Key")
}
