package throttle

import (
	"fmt"
	"net/http"
)

// ClassTransport is an http.RoundTripper that takes the tokens of each LLM
// request from a class of a hierarchy (NewQuota): each team's client gets
// the team's class, and the teams share the organisation's quota as Class
// describes. Before sending, RoundTrip estimates the request's tokens from
// its JSON body as LLM does (read through GetBody, not consumed) and waits
// for them with the request's context (Class.AcquirePermit: FIFO within
// the class, a deadline too near fails at once, spending nothing). After
// the response it settles: a status of 400 or more gives the tokens back,
// a 2xx JSON body or event stream is charged the usage it reports (or, for
// a stream that reports none, the text it carried), read as the caller reads
// it and settled when the caller reaches its end or closes it, and anything
// else keeps the estimate. A request the base transport fails is given
// back.
//
// It does not read rate-limit headers or retry: put a Transport under it
// (as its base) for the vendor's own limits. The request is never
// modified.
type ClassTransport struct {
	base http.RoundTripper
	pick func(*http.Request) (*Class, error)
	llm  LLM
}

// NewClassTransport returns a ClassTransport sending with base
// (http.DefaultTransport if nil). pick chooses the class of each request;
// a nil class sends it without taking tokens, an error fails it.
func NewClassTransport(base http.RoundTripper, pick func(*http.Request) (*Class, error), llm LLM) *ClassTransport {
	if base == nil {
		base = http.DefaultTransport
	}
	return &ClassTransport{base: base, pick: pick, llm: llm}
}

// ForClass returns a pick function for NewClassTransport that puts every
// request in c.
func ForClass(c *Class) func(*http.Request) (*Class, error) {
	return func(*http.Request) (*Class, error) { return c, nil }
}

// RoundTrip takes req's tokens from its class, sends it and settles; see
// ClassTransport.
func (t *ClassTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, err := t.pick(req)
	if err != nil {
		closeRequestBody(req)
		return nil, fmt.Errorf("throttle: choosing the class: %w", err)
	}
	if c == nil {
		return t.base.RoundTrip(req)
	}
	body, complete, err := readRequestBody(req)
	if err != nil {
		closeRequestBody(req)
		return nil, fmt.Errorf("throttle: request cost: %w", err)
	}
	in, out, ok := t.llm.Estimate(body)
	if !ok || !complete {
		in = divUp(max(int64(len(body)), req.ContentLength), t.llm.charsPerToken())
		out = t.llm.defaultMaxTokens()
	}
	cost := max(min(in+out, c.maxCost()), 1)
	p, err := c.AcquirePermit(req.Context(), cost)
	if err != nil {
		closeRequestBody(req)
		return nil, err
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		p.Cancel()
		return nil, err
	}
	switch {
	case resp.StatusCode >= 400:
		p.Cancel()
	case resp.StatusCode >= 200 && resp.StatusCode < 300 && resp.Body != nil && resp.Body != http.NoBody:
		t.llm.readUsage(resp, &usageBody{to: func(u Usage) { p.Settle(u.Input + u.Output) }})
	}
	return resp, nil
}

// maxCost is the largest cost c can ever be granted: its ceiling burst
// and the quota's capacity.
func (c *Class) maxCost() int64 {
	d := c.lock()
	defer d.mu.Unlock()
	n := c.path[len(c.path)-1].g.capacity
	for _, m := range c.path[:len(c.path)-1] {
		n = min(n, m.c.capacity)
	}
	return n
}
