package httpthrottle

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/throttlekit/throttle"

	"github.com/cenkalti/backoff/v4"
	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle/internal/headers"
)

// errRetry is what an attempt whose response calls for a retry returns to
// the back-off loop.
var errRetry = errors.New("throttle: the response calls for a retry")

// retryable reports whether resp may be retried (see Transport for the
// rules), and if so records the least wait the server asked for.
func (x *exchange) retryable(resp *http.Response, sig *headers.Signals) bool {
	// Below 400 nothing is retried (see shouldRetry).
	if resp.StatusCode < 400 {
		return false
	}
	if retry, decided := x.via.retryable(x); decided {
		return retry
	}
	if x.aboutRequest || x.stalled || x.refusal.Billing != "" || !x.t.retrySDK && retriesItself(x.req) {
		return false
	}
	if !shouldRetry(x.req, resp.StatusCode, sig) {
		return false
	}
	d, ok := sig.ServerWait(resp.StatusCode)
	if !ok {
		d = 0
	}
	x.floor = d
	// Parse lowered the wait to maxPause: the server wants a longer one.
	x.capped = sig.Capped && d >= x.t.maxPause
	x.via.retryWait(x)
	return true
}

// shouldRetry applies the retry rules that depend on the request and the
// response alone.
func shouldRetry(req *http.Request, status int, sig *headers.Signals) bool {
	if sig.ShouldRetry != nil && !*sig.ShouldRetry {
		return false
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	if sig.Throttled(status) {
		return true
	}
	if status == http.StatusServiceUnavailable || status == headers.StatusOverloaded {
		if idempotent(req) {
			return true
		}
	}
	return sig.ShouldRetry != nil && status >= 400
}

// idempotent reports whether sending req twice has the effect of sending it
// once (RFC 9110 §9.2.2), by its method or its Idempotency-Key.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return req.Header.Get("Idempotency-Key") != ""
}

// retry runs the attempts after the first, whose response resp called for
// a retry, under an exponential back-off driven by the limiter's clock.
func (x *exchange) retry(resp *http.Response) (*http.Response, error) {
	x.last = resp
	first := true
	op := func() error {
		if first {
			// RoundTrip made the first attempt: report its outcome, so that
			// the back-off decides on the wait before the second.
			first = false
			return errRetry
		}
		resp, err := x.send()
		if err != nil {
			return backoff.Permanent(err)
		}
		if x.retryable(resp, &x.sig) {
			x.last = resp
			return errRetry
		}
		x.final = resp
		return nil
	}
	notify := func(error, time.Duration) {
		x.t.retried.Add(1)
		x.keepLast()
	}
	b := &retryBackOff{x: x, ctx: doneContext{x.ctx}}
	b.exp = backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(x.t.initial),
		backoff.WithMaxInterval(x.t.maxWait),
		backoff.WithMaxElapsedTime(0),
		backoff.WithClockProvider(x.g.clock),
	)
	err := backoff.RetryNotifyWithTimer(op, b, notify, &clockTimer{clock: x.g.clock})
	switch {
	case err == nil:
		return x.final, nil
	case errors.Is(err, errRetry):
		// The back-off gave up: the last response is the answer.
		r := x.last
		x.last = nil
		return r, nil
	}
	var wait *throttle.WaitError
	if errors.As(err, &wait) && x.last != nil {
		// The next permit would come after the deadline: no retry after all.
		r := x.last
		x.last = nil
		return r, nil
	}
	x.dropLast()
	return nil, err
}

// retryBackOff is the back-off between attempts: exponential with jitter,
// never below the server's wait, stopped when the retries are used up or
// the wait would pass the context's deadline or the MaxPause.
type retryBackOff struct {
	x     *exchange
	ctx   context.Context
	exp   *backoff.ExponentialBackOff
	tries int
}

func (b *retryBackOff) Reset() {
	b.exp.Reset()
	b.tries = 0
}

func (b *retryBackOff) Context() context.Context { return b.ctx }

func (b *retryBackOff) NextBackOff() time.Duration {
	x := b.x
	select {
	case <-x.ctx.Done():
		return backoff.Stop
	default:
	}
	if b.tries >= x.t.retries || x.capped {
		return backoff.Stop
	}
	d := b.exp.NextBackOff()
	if d == backoff.Stop {
		return backoff.Stop
	}
	d = max(d, x.floor)
	if d > x.t.maxPause {
		return backoff.Stop
	}
	if dl, ok := x.ctx.Deadline(); ok && x.g.clock.Until(dl) <= d {
		return backoff.Stop
	}
	b.tries++
	return d
}

// doneContext is a context whose Err never blocks. The back-off loop calls
// Err on its context when it stops, and clockwork's fake-clock contexts
// block in Err until they are done.
type doneContext struct{ context.Context }

func (c doneContext) Err() error {
	select {
	case <-c.Done():
		return c.Context.Err()
	default:
		return nil
	}
}

// clockTimer is a backoff.Timer on a clockwork clock, so that a fake clock
// drives the waits between retries.
type clockTimer struct {
	clock clockwork.Clock
	t     clockwork.Timer
}

func (c *clockTimer) Start(d time.Duration) {
	if c.t == nil {
		c.t = c.clock.NewTimer(d)
		return
	}
	c.t.Reset(d)
}

func (c *clockTimer) Stop() {
	if c.t != nil {
		c.t.Stop()
	}
}

func (c *clockTimer) C() <-chan time.Time { return c.t.Chan() }
