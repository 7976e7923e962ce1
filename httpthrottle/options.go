package httpthrottle

import (
	"github.com/throttlekit/throttle/internal/errs"
	"net/http"
	"time"

	"github.com/throttlekit/throttle"
)

// Option configures a Transport (NewTransport) or a Handler. Most options
// belong to one side; the other refuses them, as it refuses an option
// outside its documented range, with an error matching
// throttle.ErrInvalidOption that names the option: an option is never
// silently ignored or corrected.
type Option func(*settings) error

// settings is what an Option configures: the Transport or the handler
// being made, the other nil.
type settings struct {
	t *Transport
	h *handler
}

// forTransport is an Option of the Transport only.
func forTransport(name string, f func(*Transport) error) Option {
	return func(s *settings) error {
		if s.t == nil {
			return errs.InvalidOptionf("%s is an option of NewTransport, not of Handler", name)
		}
		return f(s.t)
	}
}

// forHandler is an Option of the Handler only.
func forHandler(name string, f func(*handler) error) Option {
	return func(s *settings) error {
		if s.h == nil {
			return errs.InvalidOptionf("%s is an option of Handler, not of NewTransport", name)
		}
		return f(s.h)
	}
}

// WithCost sets what each request costs; the default is 1 on every
// limit. f must not be nil. On a Transport it cannot be combined with
// WithAccounting, which sets the cost itself. A Handler's CostFunc that
// reads the body must put back what it read (llm.Config.Cost does); under
// PerKey it is given the key's Gate (Keyed.Gate), whose Limits are the
// key's limits, without making the key a Limiter.
func WithCost(f CostFunc) Option {
	return func(s *settings) error {
		if f == nil {
			return errs.InvalidOptionf("WithCost(nil): no cost function")
		}
		if s.t != nil {
			s.t.cost, s.t.customCost = f, true
		} else {
			s.h.cost, s.h.customCost = f, true
		}
		return nil
	}
}

// WithQuotaHeaders replaces WriteIETF as a Handler's writer of the
// rate-limit headers, to speak another dialect; write is called with the
// header of every response the Handler answers or admits, before next
// runs.
func WithQuotaHeaders(write func(h http.Header, status []throttle.LimitStatus)) Option {
	return forHandler("WithQuotaHeaders", func(h *handler) error {
		if write == nil {
			return errs.InvalidOptionf("WithQuotaHeaders(nil): no writer")
		}
		h.headers, h.ietf = write, false
		return nil
	})
}

// WithRejected replaces a Handler's writer of refused requests. When it
// is called, the rate-limit headers and Retry-After are set; it must write
// the response, normally with status 429. wait is how long until the
// request would be admitted, or -1 if never.
func WithRejected(write func(w http.ResponseWriter, r *http.Request, wait time.Duration)) Option {
	return forHandler("WithRejected", func(h *handler) error {
		if write == nil {
			return errs.InvalidOptionf("WithRejected(nil): no writer")
		}
		h.rejected = write
		return nil
	})
}
