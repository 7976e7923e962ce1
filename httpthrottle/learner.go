package httpthrottle

import (
	"net/http"
	"sync"
	"time"
)

// Learner is a Gate that learns the server's limits from the responses to
// its requests (package auto's is one). A Transport finds it by type
// assertion, as it finds the Gate's other capabilities, and tells it of
// every response after it has heeded it (lowered the levels, paused on a
// refusal). Its methods may be called from many goroutines at once.
type Learner interface {
	// BeforeSend is called when a request holds its permit, before it is
	// sent: true means a pause began while it waited (one that another
	// process of a fleet shared), which the request waits out first.
	BeforeSend() bool
	// Learn is told what the server said to one request. a and what it
	// refers to are valid only during the call.
	Learn(a *Answer)
	// ServerRate is the server's rate of limit i (the Gate's own never
	// exceeds it): a Transport waits on it, rather than on the Gate's
	// share, for what is in flight to come back. 0 tokens while unknown.
	ServerRate(i int) (tokens int64, period time.Duration)
}

// Answer is what a Transport tells a Learner of one response.
type Answer struct {
	// Request is the request the server answered.
	Request *http.Request
	// Costs are what the request cost on each of the Gate's limits.
	Costs []int64
	// Status is the status as the Transport heeded it: a 429 or 403 whose
	// body says the account is out of credit is 402, one whose body says
	// the request itself is too large is 413.
	Status int
	// Throttled reports that the server said the client went over a limit
	// (a 429, or a 403 or 503 with a wait).
	Throttled bool
	// Quotas are the limits the response reported, from its headers.
	Quotas []Quota
	// MaxPause is the longest pause the Transport heeds (WithMaxPause);
	// every Quota.Reset is capped at it.
	MaxPause time.Duration
}

// Quota is one limit a response reported. Counts are hints: a server may
// round them (Anthropic rounds remaining tokens to the thousand).
type Quota struct {
	// Family is the header family it was read from: "ietf" (RateLimit and
	// RateLimit-Policy), "ietf-legacy" (RateLimit-Limit), "x-ratelimit",
	// "x-rate-limit", "openai", "anthropic" or "shopify".
	Family string
	// Name is "requests", "tokens", "input-tokens" or "output-tokens" for
	// OpenAI and Anthropic, the policy's name for "ietf", else "".
	Name string
	// Unit is what an IETF policy counts: "" for requests, or its qu
	// parameter as sent ("content-bytes", ...).
	Unit string
	// Resource is GitHub's X-RateLimit-Resource ("core", "search"), or "".
	Resource string
	// Limit is the size of the quota, Remaining what is left of it, -1
	// when not reported.
	Limit, Remaining int64
	// Reset is how long until the quota is restored, -1 when not
	// reported; Window is the period it applies to, -1 when unknown.
	Reset, Window time.Duration
}

// tell tells the Learner l of the response with status to x's attempt.
func (x *exchange) tell(l Learner, status int) {
	a := answers.Get().(*Answer)
	a.Request, a.Costs, a.Status, a.MaxPause = x.req, x.costs, status, x.t.maxPause
	a.Throttled = x.sig.Throttled(status)
	a.Quotas = a.Quotas[:0]
	for _, q := range x.sig.Quotas {
		a.Quotas = append(a.Quotas, Quota{
			Family: q.Family.String(), Name: q.Name, Unit: q.Unit, Resource: q.Resource,
			Limit: q.Limit, Remaining: q.Remaining, Reset: q.Reset, Window: q.Window,
		})
	}
	l.Learn(a)
	a.Request, a.Costs = nil, nil
	answers.Put(a)
}

// answers keeps the Answers tell fills, with their Quotas' arrays: an
// exchange lives for one call, and telling a Learner allocates nothing.
var answers = sync.Pool{New: func() any { return new(Answer) }}
