package httpthrottle

import (
	"io"
	"sync/atomic"
)

// closedBody is a request body that records whether it was closed.
type closedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *closedBody) Close() error {
	b.closed.Store(true)
	return nil
}
