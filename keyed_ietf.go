package throttle

import (
	"sync/atomic"
	"time"

	"github.com/throttlekit/throttle/internal/headers"
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
		q, window := policyWindow(l.Rate)
		c.policy[i] = headers.IETFPolicy(headers.QuoteSF(ietfName(l.Name)), "", q, window)
	}
	c.policy = c.policy[:len(c.policy):len(c.policy)]
	c.name = headers.QuoteSF(ietfName(p.limits[0].Name))
	sh := &p.shapes[0]
	if len(p.limits) != 1 || sh.num == 0 || sh.inf {
		return c
	}
	secs := ceilSeconds(time.Duration(sh.refillTime()))
	if n := (sh.capacity + 1) * (secs + 1); sh.capacity >= 0 && secs < maxIETFValues && n > 0 && n <= maxIETFValues {
		c.cap, c.secs = sh.capacity, secs
		c.state = make([]atomic.Pointer[[]string], n)
		c.retry = make([]atomic.Pointer[[]string], secs+1)
	}
	return c
}

// ietfName is the name WriteIETF gives a limit.
func ietfName(name string) string {
	if name == "" {
		return "default"
	}
	return name
}

// ceilSeconds is d in whole seconds, rounded up; 0 for d <= 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d-1)/time.Second) + 1
}

// stateOf returns the RateLimit value of the first limit with remaining
// tokens and reset, or nil if it is not one the cache keeps.
func (c *ietfCache) stateOf(remaining int64, reset time.Duration) []string {
	t := ceilSeconds(reset)
	if reset < 0 || remaining < 0 || remaining > c.cap || t > c.secs {
		return nil
	}
	slot := &c.state[remaining*(c.secs+1)+t]
	if v := slot.Load(); v != nil {
		return *v
	}
	v := []string{headers.IETFState(c.name, remaining, reset)}
	slot.Store(&v) // a race stores an equal value
	return v
}

// retryOf returns the Retry-After value of wait, or nil if it is not one
// the cache keeps.
func (c *ietfCache) retryOf(wait time.Duration) []string {
	t := ceilSeconds(wait)
	if wait < 0 || t > c.secs {
		return nil
	}
	slot := &c.retry[t]
	if v := slot.Load(); v != nil {
		return *v
	}
	v := []string{headers.RetryAfter(wait)}
	slot.Store(&v)
	return v
}
