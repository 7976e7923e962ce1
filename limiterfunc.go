package throttle

import "net/http"

// LimiterFunc chooses the Limiter that governs an HTTP request, for a
// Transport (client side) or for LimitHandler (server side): one
// shared by every request, or one per host, API key or model. A nil Limiter
// with a nil error lets the request through unlimited; an error fails it.
type LimiterFunc func(*http.Request) (*Limiter, error)

// Shared returns a LimiterFunc that puts every request under l.
func Shared(l *Limiter) LimiterFunc {
	return func(*http.Request) (*Limiter, error) { return l, nil }
}

// unlimited is the LimiterFunc of no limit, for a nil one.
func unlimited(*http.Request) (*Limiter, error) { return nil, nil }

// CostFunc returns what a request costs on each bucket of l, in the order of
// l.Buckets(). A zero cost leaves that bucket out; a request whose costs
// are all zero is free and takes no permit. The default cost is 1 on every
// bucket. Returning a number of costs other than one per bucket is a bug:
// the Transport fails the request with an error matching ErrCostCount, and
// LimitHandler answers 500, without sending or admitting it.
//
// A CostFunc that reads the request body must not consume it: on the client
// side read it through GetBody, on the server side put back what was read.
type CostFunc func(r *http.Request, l *Limiter) ([]int64, error)

// defaultCost is one request on every bucket.
func defaultCost(_ *http.Request, l *Limiter) ([]int64, error) {
	if len(l.bs) <= len(oneEach) {
		// Shared and never written: Acquire and TryAcquire only read
		// costs, and a Permit keeps a copy.
		return oneEach[:len(l.bs)], nil
	}
	costs := make([]int64, len(l.bs))
	for i := range costs {
		costs[i] = 1
	}
	return costs, nil
}

var oneEach = [...]int64{1, 1, 1, 1, 1, 1, 1, 1}

// HostKey returns the request's host (with port, if any), to key limiters by
// host with PerKey.
func HostKey(r *http.Request) string {
	if r.URL != nil && r.URL.Host != "" {
		return r.URL.Host
	}
	return r.Host
}

// HeaderKey returns a key function that reads the header name, an API key
// say, to key limiters by it with PerKey. A request without the header gets
// the empty key.
func HeaderKey(name string) func(*http.Request) string {
	name = http.CanonicalHeaderKey(name)
	return func(r *http.Request) string {
		if v := r.Header[name]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
}
