package throttle

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
)

type bestEffortKey struct{}

// AllowBestEffort returns a context under which a MarkTransport sends a
// request marked yellow: the caller accepts that it goes out above the
// committed rate (a background job, a retry that can fail).
func AllowBestEffort(ctx context.Context) context.Context {
	return context.WithValue(ctx, bestEffortKey{}, true)
}

// BestEffortAllowed reports whether ctx came from AllowBestEffort.
func BestEffortAllowed(ctx context.Context) bool {
	v, _ := ctx.Value(bestEffortKey{}).(bool)
	return v
}

// MarkTransport is an http.RoundTripper that marks every request with a
// Marker before sending it to base (which may be a Transport, for the
// quota itself):
//
//   - green requests are sent;
//   - yellow requests are sent only when their context allows best effort
//     (AllowBestEffort); otherwise they fail before sending with a
//     *MarkError matching ErrYellow, and, not being sent, spend nothing;
//   - red requests are never sent: they fail before sending with a
//     *MarkError matching ErrRed.
//
// It fails rather than holds a request: a Marker measures, it does not
// schedule, and a caller that wants to wait should do so under a Bucket
// or Transport. Like every error of a RoundTripper, the caller's HTTP
// client sees it as a failed connection; SDKs that retry connection
// errors (openai-go, anthropic-sdk-go) retry it, and should be given
// WithMaxRetries(0) or a context that does not allow best effort only
// where that is wanted. The request is never modified, and its body is
// closed when it is not sent.
type MarkTransport struct {
	base http.RoundTripper
	m    *Marker
	cost func(*http.Request) (int64, error)

	green, yellow, refused, red atomic.Int64
}

// MarkOption configures a MarkTransport.
type MarkOption func(*MarkTransport)

// MarkCost sets what a request costs on the Marker; the default is 1.
func MarkCost(f func(*http.Request) (int64, error)) MarkOption {
	return func(t *MarkTransport) { t.cost = f }
}

// NewMarkTransport returns a MarkTransport that marks requests with m and
// sends those it lets through with base (http.DefaultTransport if nil).
func NewMarkTransport(base http.RoundTripper, m *Marker, opts ...MarkOption) *MarkTransport {
	if base == nil {
		base = http.DefaultTransport
	}
	t := &MarkTransport{base: base, m: m}
	for _, o := range opts {
		o(t)
	}
	return t
}

// MarkStats counts what a MarkTransport did: requests sent green and
// yellow, yellow requests not sent (best effort not allowed), and red ones.
type MarkStats struct {
	Green, Yellow, YellowRefused, Red int64
}

// Stats returns the counts so far.
func (t *MarkTransport) Stats() MarkStats {
	return MarkStats{Green: t.green.Load(), Yellow: t.yellow.Load(), YellowRefused: t.refused.Load(), Red: t.red.Load()}
}

// RoundTrip marks req and sends it or fails it; see MarkTransport.
func (t *MarkTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	cost := int64(1)
	if t.cost != nil {
		c, err := t.cost(req)
		if err != nil {
			closeRequestBody(req)
			return nil, fmt.Errorf("throttle: request cost: %w", err)
		}
		cost = c
	}
	allow := BestEffortAllowed(req.Context())
	t.m.mu.Lock()
	color := t.m.markAt(t.m.now(), cost, Green, allow)
	t.m.mu.Unlock()
	switch {
	case color == Green:
		t.green.Add(1)
	case color == Yellow && allow:
		t.yellow.Add(1)
	default:
		if color == Red {
			t.red.Add(1)
		} else {
			t.refused.Add(1)
		}
		closeRequestBody(req)
		return nil, &MarkError{Color: color, Cost: cost, Marker: t.m.name}
	}
	return t.base.RoundTrip(req)
}
