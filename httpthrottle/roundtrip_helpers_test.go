package httpthrottle

import (
	"io"
	"net/http"
	"sync/atomic"
)

// transportFunc is an http.RoundTripper of a function.
type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// closedBody is a request body that records whether it was closed.
type closedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *closedBody) Close() error {
	b.closed.Store(true)
	return nil
}
