package httpthrottle

import (
	"fmt"
	"github.com/throttlekit/throttle/internal/errs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/headers"
	"github.com/throttlekit/throttle/pool"
)

// WithRoutes tells the Transport how to send a request through each member
// of a pool.Pool, by member name: a route rewrites the request for its
// member (its credential, its base URL or deployment path, its model; see
// RouteTo), given the Transport's own clone of the request, never the
// caller's. A member without a route gets the request as it is.
//
// Whatever the options, a request whose Gate is a pool.Pool is sent
// through the member whose Gate served its permit, and the answer is
// heeded on that member's Gate alone: its pause, its levels, its window
// resets, its settlement. A retry takes a new permit from the pool and may
// move to another member, rebuilt for it by its route; the server's wait
// then bounds the retry only as far as no other member serves sooner. An
// answer that says the member's quota is exhausted for longer than a pause
// should last quarantines the member (pool.Pool.Quarantine) after that one
// answer: a billing refusal (OpenAI's insufficient_quota and the others
// the Transport reads as such), for the pool's default quarantine
// (pool.WithQuarantine); Google's QuotaFailure of a quota per day (Gemini's
// GenerateRequestsPerDay...), until the next midnight in Pacific time,
// when such quotas reset; a wait past the MaxPause, until the end the
// server named. The request is then retried on another member, as a 429
// is, and not returned at once.
func WithRoutes(routes map[string]func(*http.Request)) Option {
	return forTransport("WithRoutes", func(t *Transport) error {
		for name, r := range routes {
			if r == nil {
				return errs.InvalidOptionf("WithRoutes: member %q has a nil route", name)
			}
		}
		t.routes = routes
		return nil
	})
}

// RouteTo returns a route (see WithRoutes) that sends requests whose URL starts with from
// to to instead (scheme, host and the path after from's), and sets
// header's fields on them: a member's base URL and credential.
// from and to are absolute URLs.
func RouteTo(from, to string, header http.Header) (func(*http.Request), error) {
	f, err := url.Parse(from)
	if err == nil && (f.Scheme == "" || f.Host == "") {
		err = fmt.Errorf("not absolute")
	}
	if err != nil {
		return nil, fmt.Errorf("throttle: RouteTo: from %q: %w", from, err)
	}
	u, err := url.Parse(to)
	if err == nil && (u.Scheme == "" || u.Host == "") {
		err = fmt.Errorf("not absolute")
	}
	if err != nil {
		return nil, fmt.Errorf("throttle: RouteTo: to %q: %w", to, err)
	}
	fromPath := strings.TrimSuffix(f.Path, "/")
	toPath := strings.TrimSuffix(u.Path, "/")
	header = header.Clone()
	return func(req *http.Request) {
		r := req.URL
		if r.Scheme == f.Scheme && r.Host == f.Host && strings.HasPrefix(r.Path, fromPath) {
			rest := strings.TrimPrefix(r.Path, fromPath)
			r.Scheme, r.Host, r.Path, r.RawPath = u.Scheme, u.Host, toPath+rest, ""
			req.Host = ""
		}
		for k, v := range header {
			req.Header[k] = v
		}
	}, nil
}

// poolVia is what an exchange whose Gate is a pool.Pool knows of the
// member under way.
type poolVia struct {
	pool   *gate        // the request's Gate, the Pool; nil for any other
	member *pool.Permit // the permit of the attempt under way
	route  func(*http.Request)
	out    bool // the last answer quarantined the member
}

// joined moves x onto the member that p, just taken, names, if p is a
// pool's.
func (v *poolVia) joined(x *exchange, p throttle.Permit) {
	pp, ok := p.(*pool.Permit)
	if !ok {
		return
	}
	if v.pool == nil {
		v.pool = x.g
	}
	m := pp.Member()
	v.member, v.route, v.out = pp, x.t.routes[m.Name], false
	x.g = x.t.gates.Of(m.Gate)
}

// rejoin takes x back to the pool, its Gate, before an attempt takes its
// permit.
func (v *poolVia) rejoin(x *exchange) {
	x.g, v.member, v.route = v.pool, nil, nil
}

// heed quarantines the member under way (there is one) if resp says its
// quota is exhausted for longer than a pause should last.
func (v *poolVia) heed(x *exchange, resp *http.Response) {
	if until, out := v.exhausted(x, resp); out {
		m := v.member.Member()
		// The name is the Pool's own member's: Quarantine cannot fail.
		_ = v.member.Pool().Quarantine(m.Name, until)
		v.out = true
	}
	v.hintSDK(x, resp)
}

// hintSDK tells an SDK that retries a refusal itself (see WithSDKRetries)
// when the pool can serve its retry: the server's Retry-After is its
// member's, and another member may serve at once. It sets Retry-After-Ms,
// which the Stainless SDKs read before Retry-After, to the pool's wait
// (at least 1 ms: they ignore 0) when that is shorter than the server's.
func (v *poolVia) hintSDK(x *exchange, resp *http.Response) {
	if x.t.retrySDK || !retriesItself(x.req) || resp.Header == nil || !x.sig.Throttled(resp.StatusCode) {
		return
	}
	w, err := v.pool.g.WaitTime(x.costs...)
	if err != nil {
		return
	}
	if d, ok := x.sig.Pause(); ok && w >= d {
		return
	}
	ms := max((w+time.Millisecond-1)/time.Millisecond, 1)
	resp.Header.Set("Retry-After-Ms", strconv.FormatInt(int64(ms), 10))
}

// exhausted reports whether resp says the member's quota is exhausted
// beyond a pause, and until when.
func (v *poolVia) exhausted(x *exchange, resp *http.Response) (time.Time, bool) {
	clock := x.g.clock
	q := v.member.Pool().DefaultQuarantine()
	switch {
	case x.refusal.Billing != "":
		return clock.Now().Add(q), true
	case x.refusal.Daily:
		return headers.NextPacificMidnight(clock.Now()), true
	case !x.sig.Throttled(resp.StatusCode) || !x.sig.Capped && !x.refusal.Capped:
		return time.Time{}, false
	}
	// The wait was cut to the MaxPause: read it whole.
	var whole headers.Signals
	headers.ParseClock(&whole, resp.Header, clock, 0)
	if d, ok := whole.Pause(); ok && d > x.t.maxPause {
		return clock.Now().Add(d), true
	}
	return clock.Now().Add(max(q, x.t.maxPause)), true
}

// retryable decides, for a request on a pool, whether the answer just read
// is retried: one that quarantined its member is, on another member, if
// the request can be replayed and its SDK leaves retries to the
// Transport; decided is false for any other answer.
func (v *poolVia) retryable(x *exchange) (retry, decided bool) {
	if !v.out {
		return false, false
	}
	if x.aboutRequest || x.stalled || !x.t.retrySDK && retriesItself(x.req) {
		return false, true
	}
	if x.req.Body != nil && x.req.Body != http.NoBody && x.req.GetBody == nil {
		return false, true
	}
	x.floor, x.capped = 0, false
	return true, true
}

// retryWait lowers the least wait before a retry on a pool to the wait of
// the member that serves soonest: the refused member is paused, another
// may serve at once.
func (v *poolVia) retryWait(x *exchange) {
	if v.pool == nil || x.floor == 0 {
		return
	}
	if w, err := v.pool.g.WaitTime(x.costs...); err == nil && w < x.floor {
		x.floor = w
		x.capped = false
	}
}
