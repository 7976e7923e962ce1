package httpthrottle

import (
	"fmt"
	"net/http"
	"reflect"

	"github.com/throttlekit/throttle"

	"github.com/jonboulle/clockwork"
)

// Picker chooses the Gate that governs an HTTP request, for a Transport
// (client side) or a Handler (server side): one shared by every request
// (Shared), or one per host, API key or model (PerKey). Any Gate will do:
// a Limiter, a key's Gate of a Keyed, an htb.Limiter, a trtcm.Marker, a
// pool.Pool, or redisbucket's Limiter, whose quota many processes share.
// An error fails the request. A nil Gate (or a nil *Limiter) with a nil
// error is an error too, which names the request's host: it most often
// comes of a constructor's error ignored, and letting the request through
// would silently lift every limit. For no limit, pick a Limiter at rate
// throttle.Inf: it admits everything and still heeds a server's pauses.
type Picker interface {
	Pick(*http.Request) (throttle.Gate, error)
}

// PickFunc is a function that is a Picker.
type PickFunc func(*http.Request) (throttle.Gate, error)

// Pick returns f(r).
func (f PickFunc) Pick(r *http.Request) (throttle.Gate, error) { return f(r) }

// Shared returns a Picker that puts every request under g. A nil g makes
// NewTransport fail, and Handler panic.
func Shared(g throttle.Gate) Picker { return sharedPick{g} }

// sharedPick is the Picker of Shared, whose Gate a constructor checks
// before the first request (a nil Gate, limits WithAccounting cannot find).
type sharedPick struct{ g throttle.Gate }

func (s sharedPick) Pick(*http.Request) (throttle.Gate, error) { return s.g, nil }

// sharedGate returns the Gate of pick when pick is Shared's.
func sharedGate(pick Picker) (throttle.Gate, bool) {
	s, ok := pick.(sharedPick)
	return s.g, ok
}

// noGate is the error of a request whose pick chose no Gate.
func noGate(req *http.Request) error {
	return fmt.Errorf("throttle: the Picker returned no Gate (a nil Gate and no error) for a request to %q: was a constructor's error ignored? (for no limit, a Limiter at rate throttle.Inf)", HostKey(req))
}

// noGateIn reports whether g holds no Gate: nil, or a nil pointer of a
// Gate's type (a constructor's error ignored).
func noGateIn(g throttle.Gate) bool {
	if g == nil {
		return true
	}
	v := reflect.ValueOf(g)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// gateClock returns the clock the Transport reads pauses and deadlines on
// for g: its own, through its Clock method (a Limiter's, an htb.Limiter's,
// a trtcm.Marker's, redisbucket's), else the real clock.
func gateClock(g throttle.Gate) clockwork.Clock {
	if c, ok := g.(interface{ Clock() clockwork.Clock }); ok {
		if clk := c.Clock(); clk != nil {
			return clk
		}
	}
	return clockwork.NewRealClock()
}

// CostFunc returns what a request costs on each limit of g, in the order of
// g.Limits(). A zero cost leaves that limit out; a request whose costs are
// all zero is free and takes no permit. The default cost is 1 on every
// limit. Another number of costs than one per limit is a bug: the
// Transport fails the request (throttle.ErrInvalidCost), Handler answers
// 500.
//
// A CostFunc that reads the request body must not consume it: on the client
// side read it through GetBody, on the server side put back what was read.
type CostFunc func(r *http.Request, g throttle.Gate) ([]int64, error)

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
