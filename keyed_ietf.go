package throttle

import (
	"sync/atomic"
	"time"

	"github.com/throttlekit/throttle/internal/fields"
)

// maxIETFValues bounds the RateLimit values an ietfCache keeps: a limit
// whose capacity and refill time in seconds allow more (capacity+1 times
// seconds+1) has them formatted on each answer instead.
const maxIETFValues = 1 << 14

// ietfCache holds, for one set of limits, the header values WriteIETF
// writes for a key held compactly, each made once, so that LimitHandler
// over PerKey formats no header on an answer: RateLimit-Policy, which the
// limits alone decide, and for one limit the RateLimit of every whole
// remaining and reset in seconds a compact key can have (its reset is at
// most its refill time from empty), and the Retry-After of every wait in
// seconds. Values are slices of one element and capacity one, put into
// response headers as they are: an Add to the field makes a new slice, and
// nothing writes into them.
type ietfCache struct {
	policy []string                   // RateLimit-Policy: one value per limit
	name   string                     // the first limit's name as a String
	cap    int64                      // the first limit's capacity
	secs   int64                      // the longest reset or wait of a compact key, in whole seconds; -1: no values kept
	state  []atomic.Pointer[[]string] // RateLimit at remaining*(secs+1)+t, made on first use
	retry  []atomic.Pointer[[]string] // Retry-After at the wait in whole seconds
}

func newIETFCache(p *profile) *ietfCache {
	c := &ietfCache{policy: make([]string, len(p.limits)), secs: -1}
	for i, l := range p.limits {
		q, window := fields.PolicyWindow(l.Rate.tokens, l.Rate.period)
		c.policy[i] = fields.IETFPolicy(fields.Quote(fields.PolicyName(l.Name)), "", q, window)
	}
	c.policy = c.policy[:len(c.policy):len(c.policy)]
	c.name = fields.Quote(fields.PolicyName(p.limits[0].Name))
	sh := &p.shapes[0]
	if len(p.limits) != 1 || sh.Num == 0 || sh.Inf {
		return c
	}
	secs := fields.CeilDiv(time.Duration(sh.RefillTime()), time.Second)
	if n := (sh.Cap + 1) * (secs + 1); sh.Cap >= 0 && secs < maxIETFValues && n > 0 && n <= maxIETFValues {
		c.cap, c.secs = sh.Cap, secs
		c.state = make([]atomic.Pointer[[]string], n)
		c.retry = make([]atomic.Pointer[[]string], secs+1)
	}
	return c
}

// stateOf returns the RateLimit value of the first limit with remaining
// tokens and reset, or nil if it is not one the cache keeps.
func (c *ietfCache) stateOf(remaining int64, reset time.Duration) []string {
	t := fields.CeilDiv(reset, time.Second)
	if reset < 0 || remaining < 0 || remaining > c.cap || t > c.secs {
		return nil
	}
	slot := &c.state[remaining*(c.secs+1)+t]
	if v := slot.Load(); v != nil {
		return *v
	}
	v := []string{fields.IETFState(c.name, remaining, reset)}
	slot.Store(&v) // a race stores an equal value
	return v
}

// retryOf returns the Retry-After value of wait, or nil if it is not one
// the cache keeps.
func (c *ietfCache) retryOf(wait time.Duration) []string {
	t := fields.CeilDiv(wait, time.Second)
	if wait < 0 || t > c.secs {
		return nil
	}
	slot := &c.retry[t]
	if v := slot.Load(); v != nil {
		return *v
	}
	v := []string{fields.RetryAfter(wait)}
	slot.Store(&v)
	return v
}
