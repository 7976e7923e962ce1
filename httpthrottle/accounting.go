package httpthrottle

import (
	"github.com/throttlekit/throttle/internal/errs"
	"net/http"

	"github.com/throttlekit/throttle"
)

// Accounting is a cost that knows what each limit counts and settles a
// call from its response: an LLM API's tokens, reserved on an estimate and
// settled to the usage the response reports (package
// github.com/throttlekit/throttle/httpthrottle/llm implements it). Give it
// to a Transport with WithAccounting; the Transport uses it the same way
// whatever the Gate.
type Accounting interface {
	// Cost returns the cost of r on each limit of g, as a CostFunc does.
	Cost(r *http.Request, g throttle.Gate) ([]int64, error)
	// Check reports, as an error matching throttle.ErrInvalidOption, a
	// Gate of these limits on which the accounting would count wrong.
	// NewTransport calls it for the Gate given to Shared.
	Check(limits []throttle.Limit) error
	// Counts reports whether the limit named limit counts what a server's
	// quota named quota counts ("requests", "tokens", "input-tokens",
	// "output-tokens" in the vendors' headers), so that a quota the Gate
	// has no limit of the same name for lowers that limit.
	Counts(limit, quota string) bool
	// Settle settles a, the permit of one attempt, from resp, the response
	// it got; a's costs are to be ended (Settle or Keep) now or later, as
	// the caller reads the body, and once. It reports whether resp
	// refuses the request itself rather than the client's pace (a 429
	// saying the request is too large): the Transport then neither pauses
	// nor retries. refund, if not nil, settles a refusal: the Transport
	// runs it once it has paused for the refusal, since a refund serves
	// the callers waiting.
	Settle(resp *http.Response, a Attempt) (aboutRequest bool, refund func())
}

// Attempt is the permit of one attempt, as the Transport hands it to an
// Accounting to settle. Its methods are safe to call from any goroutine;
// ReportedLimit and RefusalHead describe the response being settled and
// are to be called during Accounting.Settle.
type Attempt interface {
	// Settle ends the permit at actual, one cost per limit. A cost above a
	// limit's capacity is settled as the capacity and counted in
	// TransportStats.Clamped: a server's garbage figure must not put a
	// client in debt for hours. A second end returns throttle.ErrSettled.
	Settle(actual ...int64) error
	// Keep ends the permit at the costs taken.
	Keep()
	// Costs returns the costs taken, one per limit; not to be written.
	Costs() []int64
	// LimitName returns the name of limit i, in cost order.
	LimitName(i int) string
	// ReportedLimit returns the smallest positive limit the response
	// reports for the quota named quota ("tokens", say), or 0.
	ReportedLimit(quota string) int64
	// RefusalHead returns the prefix of a refusal's body (a 429's or a
	// 403's) that the Transport read before deciding, within its bounds of
	// size and time (nil if the body stalled), with ok true; ok is false
	// when the Transport read none, and the body is the accounting's to
	// read.
	RefusalHead() (head []byte, ok bool)
}

// WithAccounting makes the Transport cost each request with a.Cost, match
// a server's quotas to limits with a.Counts, check the Gate given to
// Shared with a.Check, and settle the permit of every attempt with
// a.Settle. It sets the cost: it cannot be combined with WithCost.
func WithAccounting(a Accounting) Option {
	return forTransport("WithAccounting", func(t *Transport) error {
		if a == nil {
			return errs.InvalidOptionf("WithAccounting(nil): no accounting")
		}
		t.acct = a
		return nil
	})
}
