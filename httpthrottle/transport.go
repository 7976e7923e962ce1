package httpthrottle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/errs"

	"golang.org/x/sync/semaphore"

	"github.com/throttlekit/throttle/internal/headers"
	"github.com/throttlekit/throttle/internal/ledger"
)

// defaultMaxPause is the longest a Transport waits on what a server says,
// unless WithMaxPause sets another limit.
const defaultMaxPause = 60 * time.Second

// defaultRetries is how many times a Transport retries a request, unless
// WithRetries says otherwise.
const defaultRetries = 3

// Transport is an http.RoundTripper that keeps the requests of an
// http.Client under a server's quota, and reacts when the server says the
// client went over it. docs/http-client.md ("The Transport's rules")
// states each rule; in short:
//
//   - Before sending, RoundTrip takes a permit from the request's Gate
//     (see Picker) with the request's context, in FIFO order. A request
//     whose wait certainly passes its deadline (a pause the server named,
//     exact arithmetic on settled state) fails at once with a *WaitError
//     matching context.DeadlineExceeded and spends nothing; a wait that
//     rests on an estimate is waited, within the deadline.
//   - It reads every response's rate-limit headers and the body of a 429
//     or 403 (handed back intact): a reported remaining count lowers the
//     matching limit; a refusal pauses the whole Gate until the instant
//     the server named (capped at the MaxPause), or on the SDKs' back-off
//     schedule when it names none; a billing refusal is returned at once.
//   - A refused request that can be replayed is retried with back-off
//     (WithRetries, WithBackOff), ahead of the calls queued behind it,
//     never past its deadline; otherwise the last response is returned,
//     body intact, with a nil error, as the RoundTripper contract asks.
//     Requests of SDKs that retry on their own are left to them (see
//     RefusalHeader).
//   - Every Gate gets the same treatment through the capabilities it has
//     (Taker, Pauser, Leveler, Tuner, Meter, Observer, Learner), on the
//     Gate's clock (its Clock method), so a fake clock drives it in tests.
//     A Meter's levels are read before a call that could open a burst from
//     a full limit; a Meter whose Status may cost a round trip can spare it
//     with a StatusBound method, of Status's signature, that bounds the
//     levels from above without one (redisbucket's Limiter has one).
type Transport struct {
	base http.RoundTripper
	pick Picker
	cost CostFunc
	// customCost records WithCost, which WithAccounting excludes.
	customCost bool
	// acct is WithAccounting's, nil without it: it also matches the
	// server's quotas to limits (see quotaIndex) and settles each
	// attempt's permit from its response.
	acct     Accounting
	retrySDK bool // retry requests of SDKs that retry on their own
	inflight *semaphore.Weighted
	maxPause time.Duration
	retries  int
	initial  time.Duration
	maxWait  time.Duration
	// refusalWait bounds the wait for a refusal's body (refusalWait; tests
	// shorten it).
	refusalWait time.Duration

	requests, sent, retried, throttled, malformed, failed, refused, clamped atomic.Int64
	waited                                                                  atomic.Int64
	// secondary counts GitHub secondary limits in a row that named no wait,
	// for the growing pause of secondaryWait.
	secondary atomic.Int64
	resets    ledger.Resets
	inFlight  ledger.Flights
	// taking books what calls under an Accounting are taking, from before
	// their take until they are booked in flight or give their costs
	// back: a Gate's levels show a take before its caller can book it.
	taking ledger.Flights
	gates  gateCache
	bursts ledger.Bursts
	// pauses are the refusals without a usable wait.
	pauses *ledger.Refusals
	// routes are for Gates that are pools (transport_pool.go).
	routes map[string]func(*http.Request)
}

// WithInFlight caps the requests in flight at n, n >= 1: a request holds
// one slot from the moment it is sent until its response body is closed
// (or the base transport fails). Slots are handed out in FIFO order, after
// the permit. Vendors cap concurrent requests as well as their rate.
// Without the option there is no cap.
func WithInFlight(n int64) Option {
	return forTransport("WithInFlight", func(t *Transport) error {
		if n < 1 {
			return errs.InvalidOptionf("WithInFlight(%d): the cap must be at least 1 (leave the option out for no cap)", n)
		}
		t.inflight = semaphore.NewWeighted(n)
		return nil
	})
}

// WithMaxPause caps every wait a server can impose (Retry-After, quota
// resets) at d, d > 0: a longer one pauses the Limiter for d only and is
// not retried. The default is 60 seconds.
func WithMaxPause(d time.Duration) Option {
	return forTransport("WithMaxPause", func(t *Transport) error {
		if d <= 0 {
			return errs.InvalidOptionf("WithMaxPause(%v): the cap must be positive", d)
		}
		t.maxPause = d
		return nil
	})
}

// WithRetries sets how many times a refused request is retried, n >= 0; 0
// never retries. The default is 3.
func WithRetries(n int) Option {
	return forTransport("WithRetries", func(t *Transport) error {
		if n < 0 {
			return errs.InvalidOptionf("WithRetries(%d): the count must be 0 or more", n)
		}
		t.retries = n
		return nil
	})
}

// WithBackOff sets the exponential back-off between retries: the first
// interval initial (default 500ms), growing 1.5 times per retry with ±50%
// jitter up to max (default 30s); 0 < initial <= max. A server's
// Retry-After is always the least wait.
func WithBackOff(initial, max time.Duration) Option {
	return forTransport("WithBackOff", func(t *Transport) error {
		if initial <= 0 || max < initial {
			return errs.InvalidOptionf("WithBackOff(%v, %v): the intervals must satisfy 0 < initial <= max", initial, max)
		}
		t.initial, t.maxWait = initial, max
		return nil
	})
}

// NewTransport returns a Transport that sends requests through base
// (http.DefaultTransport if nil) under the Gate that pick chooses for each
// request. It fails for a nil pick, for Shared given no Gate, for an
// option outside its range (an error matching throttle.ErrInvalidOption),
// and for WithAccounting over a Shared Gate its Check refuses. There is no
// unlimited default: for no limit, a Limiter at rate throttle.Inf. It
// returns an error rather than panicking: its arguments are often read
// from a config, and a bad config is an error to report.
func NewTransport(base http.RoundTripper, pick Picker, opts ...Option) (*Transport, error) {
	if pick == nil {
		return nil, errors.New("throttle: NewTransport given a nil Picker: every request needs a Gate (for no limit, Shared of a Limiter at rate throttle.Inf)")
	}
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{
		base:     base,
		pick:     pick,
		maxPause: defaultMaxPause,
		retries:  defaultRetries,
		initial:  500 * time.Millisecond,
		maxWait:  30 * time.Second,

		refusalWait: refusalWait,
	}
	t.pauses = ledger.NewRefusals()
	for i, opt := range opts {
		if opt == nil {
			return nil, errs.InvalidOptionf("NewTransport given a nil Option (option %d)", i)
		}
		if err := opt(&settings{t: t}); err != nil {
			return nil, err
		}
	}
	if t.acct != nil && t.customCost {
		return nil, errs.InvalidOptionf("NewTransport given both WithAccounting and WithCost: WithAccounting sets the cost, so the other would be ignored")
	}
	if g, ok := sharedGate(pick); ok {
		if newGate(g, nil).none {
			return nil, errors.New("throttle: NewTransport given Shared of a nil Gate: was its constructor's error ignored? (for no limit, a Limiter at rate throttle.Inf)")
		}
		if t.acct != nil {
			if err := t.acct.Check(g.Limits()); err != nil {
				return nil, err
			}
		}
	}
	if t.acct != nil {
		t.cost = t.acct.Cost
	}
	return t, nil
}

// TransportStats counts what a Transport did since it was made.
type TransportStats struct {
	Requests  int64 // calls of RoundTrip
	Sent      int64 // attempts handed to the base transport
	Retried   int64 // attempts that were retried
	Throttled int64 // responses that said the client went over the quota
	Malformed int64 // malformed rate-limit header fields ignored
	Failed    int64 // RoundTrip calls that returned an error, or a refusal of the Transport's own (RefusalHeader)
	// Refused counts responses that refused the account rather than the
	// pace (a spent credit or a spend cap; see Transport): returned after
	// their one attempt, pausing nothing. They are not in Throttled.
	Refused int64
	// Clamped counts the settlements (WithAccounting) above a limit's
	// capacity, settled as the capacity rather than as reported: a garbage
	// usage figure must not put a client in debt for hours. See Attempt.
	Clamped int64
	Waited  time.Duration // total time requests waited before being sent
}

// Stats returns the counters of t.
func (t *Transport) Stats() TransportStats {
	return TransportStats{
		Requests:  t.requests.Load(),
		Sent:      t.sent.Load(),
		Retried:   t.retried.Load(),
		Throttled: t.throttled.Load(),
		Malformed: t.malformed.Load(),
		Failed:    t.failed.Load(),
		Refused:   t.refused.Load(),
		Clamped:   t.clamped.Load(),
		Waited:    time.Duration(t.waited.Load()),
	}
}

// CloseIdleConnections closes the idle connections of the base transport,
// if it can.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip sends req under its Limiter; see Transport.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.requests.Add(1)
	resp, err := t.roundTrip(req)
	if err != nil {
		t.failed.Add(1)
		// An SDK that retries any error would retry a refusal of ours:
		// it gets a response that says not to.
		if r := refusal(req, err); r != nil {
			return r, nil
		}
	}
	return resp, err
}

func (t *Transport) roundTrip(req *http.Request) (*http.Response, error) {
	g, err := t.pick.Pick(req)
	if err != nil {
		closeRequestBody(req)
		return nil, fmt.Errorf("throttle: choosing the limiter: %w", err)
	}
	gt := t.gates.Of(g)
	if gt.none {
		closeRequestBody(req)
		return nil, noGate(req)
	}
	costs := gt.ones
	if t.cost != nil {
		costs, err = t.cost(req, g)
		if n := len(gt.limits); err == nil && len(costs) != n {
			err = errs.CostCount(len(costs), n, "bucket")
		}
		if err != nil {
			closeRequestBody(req)
			return nil, fmt.Errorf("throttle: request cost: %w", err)
		}
	}
	// x stays on the stack unless a retry follows: the retry's closures
	// take a copy to the heap. It is filled field by field, not from a
	// composite literal built in a temporary and copied over.
	var x exchange
	x.t, x.req, x.ctx, x.g, x.costs = t, req, req.Context(), gt, costs
	resp, err := x.send()
	if err != nil {
		if x.n == 0 {
			closeRequestBody(req)
		}
		return nil, err
	}
	if resp.StatusCode < 400 || !x.retryable(resp, &x.sig) {
		return resp, nil
	}
	rx := x
	return rx.retry(resp)
}

// exchange is one call of RoundTrip: the request and its attempts.
type exchange struct {
	t     *Transport
	req   *http.Request
	ctx   context.Context
	g     *gate // the request's Gate
	costs []int64
	// p is the Permit of the attempt under way, on a Gate that is no
	// Taker; a Taker's costs are settled with x.costs.
	p throttle.Permit
	n int // attempts sent

	// Between attempts: the response to return if no retry follows, and
	// what the server said about the wait.
	last   *http.Response
	floor  time.Duration // least wait, from Retry-After or a quota reset
	capped bool          // the server asked for more than maxPause
	final  *http.Response
	sig    headers.Signals // what the last response said
	// The last response refuses the request itself (too large), not the
	// client's pace: it is neither heeded as a throttle nor retried.
	aboutRequest bool
	// What the body of the last 429 or 403 said (see readRefusal), and
	// whether it stalled instead: a refusal whose body has not come is
	// returned as it is, never retried (its body cannot be kept).
	refusal headers.Refusal
	stalled bool
	// burst is the mask of the buckets whose bursts from full the attempt
	// under way joined (see ledger.Bursts), until it is answered or given back.
	burst uint64
	// takingOn is the Gate whose t.taking books the costs (startTaking);
	// a pool's Gate, which the member that serves the call replaces.
	takingOn throttle.Gate
	// via is the member under way of a Gate that is a pool.Pool.
	via poolVia
}

// send makes one attempt: permit, in-flight slot, request, and the reading
// of the response's signals.
func (x *exchange) send() (*http.Response, error) {
	t := x.t
	if x.via.pool != nil {
		x.via.rejoin(x)
	}
	var waited int64
	taken := !costsFree(x.costs)
	if taken {
		w, err := x.turn()
		if err != nil {
			return nil, err
		}
		waited = w
	}
	release, err := x.inFlightSlot(&waited, taken)
	if err != nil {
		return nil, err
	}
	req, err := x.attemptRequest()
	if err == nil {
		err = x.expired()
	}
	if err != nil {
		if release != nil {
			release()
		}
		x.giveBack(taken)
		return nil, err
	}
	x.dropLast()
	if waited != 0 {
		t.waited.Add(waited)
	}
	x.n++
	t.sent.Add(1)
	booked := taken && x.books()
	if booked {
		t.inFlight.Add(x.g.g, x.costs)
	}
	x.untake()
	resp, err := t.base.RoundTrip(req)
	if x.burst != 0 {
		t.bursts.Answered(x.g.burst, x.burst)
		x.burst = 0
	}
	if err != nil {
		// The costs stay spent: the request may have reached the server.
		if booked {
			t.inFlight.Settled(x.g.g, x.costs)
		}
		if release != nil {
			release()
		}
		return nil, err
	}
	if release != nil {
		resp.Body = &releaseBody{ReadCloser: resp.Body, release: release}
	}
	x.read(resp, taken)
	if x.via.member != nil {
		x.via.heed(x, resp)
	}
	return resp, nil
}

// turn takes the attempt's costs (see takeTurn), joining a burst from
// full when one is followed, and waits out a fleet's pause that began
// meanwhile; it returns the wait.
func (x *exchange) turn() (int64, error) {
	t := x.t
	// Bursts are followed only under an Accounting: a call without one
	// does not look at them.
	var full uint64
	var members memberFull
	if t.acct != nil {
		if t.follows(x.g) {
			full = t.fullBefore(x.g, x.costs)
		} else {
			members = t.membersFull(x.g, x.costs)
		}
	}
	waited, err := x.takeTurn()
	if err != nil {
		return 0, err
	}
	if t.acct != nil {
		if x.via.member != nil {
			full = members.of(x.via.member.Member().Name)
		}
		if t.follows(x.g) {
			if err := x.joinBurst(full); err != nil {
				return 0, err
			}
		}
	}
	if x.g.learn != nil && x.g.learn.BeforeSend() {
		// A fleet's pause began while the call waited: wait it out.
		if err := x.waitPause(); err != nil {
			x.giveBack(true)
			return 0, err
		}
	}
	return waited, nil
}

// expired returns ctx's error when the request's context ended while it
// waited for its turn (a grant at its deadline): it is then not sent, so
// that the costs go back, which no server counted, rather than stay spent
// on a request the base transport would refuse to send.
func (x *exchange) expired() error {
	select {
	case <-x.ctx.Done():
		return x.ctx.Err()
	default:
		return nil
	}
}

// takeTurn takes the request's costs, waiting its turn: a recognised retry
// of a refused call as takeRetry says, any other as the Gate decides,
// refused before its deadline only on a wait that is certain (takeLater).
func (x *exchange) takeTurn() (w int64, err error) {
	x.startTaking()
	defer func() {
		if err != nil {
			x.untake()
		}
	}()
	if x.t.pauses.Active.Load() != 0 {
		if until, retry := x.t.pauses.RetryOf(x.req); retry {
			return x.takeRetry(until)
		}
	}
	w, err = x.take(x.turnContext())
	if err != nil {
		return x.takeLater(err)
	}
	return w, nil
}

// startTaking books the costs the call is about to take in t.taking, under an
// Accounting on a keyed Gate, until untake: a call refused meanwhile
// counts them among what could be given back, since the Gate's levels
// may show them taken before this call books them in flight.
func (x *exchange) startTaking() {
	if x.books() && x.takingOn == nil {
		x.t.taking.Add(x.g.g, x.costs)
		x.takingOn = x.g.g
	}
}

// books reports whether the call's costs are booked while it takes them
// and in flight: under an Accounting, on a Gate that can key the books.
func (x *exchange) books() bool { return x.t.acct != nil && x.g.keyed }

// untake ends startTaking's booking: the call is booked in flight, or took
// nothing, or gave its costs back.
func (x *exchange) untake() {
	if x.takingOn != nil {
		x.t.taking.Settled(x.takingOn, x.costs)
		x.takingOn = nil
	}
}

// retryPriority is the priority a Transport's own retry queues with (see
// turnContext).
const retryPriority = math.MaxInt

// turnContext is the context the request queues on the Gate with. A retry
// of the Transport's queues ahead of the calls waiting there: its call had
// its turn, and the server's wait was every call's, which the pause made
// them all wait; behind them it would pay that wait twice.
func (x *exchange) turnContext() context.Context {
	if x.n == 0 {
		return x.ctx
	}
	return throttle.WithPriority(x.ctx, retryPriority)
}

// take takes the costs on the Gate with ctx: a Taker's Take, which reports
// its wait, or Acquire, keeping the Permit for the settlement and timing
// the wait on the Gate's clock.
func (x *exchange) take(ctx context.Context) (int64, error) {
	if tk := x.g.tk; tk != nil {
		d, err := tk.Take(ctx, x.costs...)
		return int64(d), err
	}
	start := x.g.clock.Now()
	p, err := x.g.g.Acquire(ctx, x.costs...)
	if err != nil {
		return 0, err
	}
	x.p = p
	d := int64(x.g.clock.Since(start))
	x.via.joined(x, p)
	return d, nil
}

// inFlightSlot waits for a slot of WithInFlight, adding the wait to
// *waited, and returns its release, nil without the option.
func (x *exchange) inFlightSlot(waited *int64, taken bool) (func(), error) {
	t := x.t
	if t.inflight == nil {
		return nil, nil
	}
	if !t.inflight.TryAcquire(1) {
		start := x.now()
		if err := t.inflight.Acquire(x.ctx, 1); err != nil {
			x.giveBack(taken)
			return nil, err
		}
		// The slot may have come after a pause began: wait it out.
		if err := x.waitPause(); err != nil {
			t.inflight.Release(1)
			x.giveBack(taken)
			return nil, err
		}
		*waited += x.now() - start
	}
	return sync.OnceFunc(func() { t.inflight.Release(1) }), nil
}

// attemptRequest returns the request to send: the caller's on the first
// attempt, a clone with a fresh body from GetBody on a retry; a clone
// rewritten by its route for a pool's member.
func (x *exchange) attemptRequest() (*http.Request, error) {
	if x.n == 0 && x.via.route == nil {
		return x.req, nil
	}
	req := x.req.Clone(x.ctx)
	if x.n != 0 && x.req.Body != nil && x.req.Body != http.NoBody {
		var err error
		if req.Body, err = x.req.GetBody(); err != nil {
			return nil, fmt.Errorf("throttle: replaying the request body: %w", err)
		}
	}
	if x.via.route != nil {
		x.via.route(req)
	}
	return req, nil
}

// read reads what resp says and heeds it: the rate-limit signals, a
// refusal's body, the settlement WithAccounting makes, the pause.
func (x *exchange) read(resp *http.Response, taken bool) {
	t := x.t
	headers.ParseClock(&x.sig, resp.Header, x.g.clock, t.maxPause)
	status := resp.StatusCode
	x.refusal, x.stalled = headers.Refusal{}, false
	if status == http.StatusTooManyRequests || status == http.StatusForbidden {
		x.readRefusal(resp)
		if x.refusal.Secondary {
			t.secondaryWait(&x.sig)
		}
	} else if status < 300 {
		if t.secondary.Load() != 0 {
			t.secondary.Store(0)
		}
		if t.pauses.Active.Load() != 0 {
			t.pauses.Succeeded()
		}
	}
	x.aboutRequest = false
	var refund func()
	if t.acct != nil && taken {
		// heed runs the refund: after a refusal's pause begins, since a
		// refund serves the queue, and before the levels, which it must
		// not undo.
		x.aboutRequest, refund = t.acct.Settle(resp, x.attempt(resp))
	}
	switch {
	case x.refusal.Billing != "":
		// Heeded as the 402 it means: the quotas it reports, no pause.
		status = http.StatusPaymentRequired
		t.refused.Add(1)
		observeRefused(x.g, x.costs, x.refusal.Billing)
		noRetryForSDK(x.req, resp)
	case x.aboutRequest:
		// Heeded as the 413 it means: the quotas it reports, no pause.
		status = http.StatusRequestEntityTooLarge
		noRetryForSDK(x.req, resp)
	}
	// A success that carries no signal, most responses, needs nothing.
	if status >= 400 || len(x.sig.Quotas) != 0 || len(x.sig.Malformed) != 0 || refund != nil {
		t.heed(x.req, x.g, x.costs, status, &x.sig, x.g.clock, refund)
	}
	if l := x.g.learn; l != nil {
		// A 429 about the request itself tells nothing of the quota's rate.
		x.tell(l, status)
	}
}

// costsFree reports whether a request costs nothing on every bucket. An
// empty list is not free: Acquire rejects it.
func costsFree(costs []int64) bool {
	if len(costs) == 0 {
		return false
	}
	for _, c := range costs {
		if c != 0 {
			return false
		}
	}
	return true
}

// takeLater is what follows a refusal err of the costs: a wait past the
// deadline is refused only when its certain part passes the deadline too
// (sureWait); otherwise the request queues (takeHoping).
func (x *exchange) takeLater(err error) (int64, error) {
	var wait *throttle.WaitError
	if !errors.As(err, &wait) {
		return 0, err
	}
	if err := x.t.sureWait(x.ctx, x.g, x.costs, x.takingOn == x.g.g, x.g.clock, err); err != nil {
		return 0, err
	}
	return x.takeHoping()
}

// now reads the time waits are measured on, the Gate's clock.
func (x *exchange) now() int64 { return x.g.clock.Now().UnixNano() }

// attempt returns the permit of the attempt just answered by resp, for
// the Accounting to settle, booked as in flight (see ledger.Flights).
func (x *exchange) attempt(resp *http.Response) Attempt {
	a := &attempt{t: x.t, g: x.g, costs: x.costs, p: x.p, sig: &x.sig, body: resp.Body}
	x.p = nil
	return a
}

// joinBurst books the attempt, which took its costs from buckets of
// which full were at their capacity before, in the bursts from full (see
// ledger.Bursts), and waits for what a call admitted past a burst's capacity
// waits for.
func (x *exchange) joinBurst(full uint64) error {
	var waits []ledger.Wait
	x.burst, waits = x.t.bursts.Join(x.g.burst, x.costs, full)
	for _, w := range waits {
		if err := w.Wait(x.ctx, x.g.clock); err != nil {
			x.giveBack(true)
			return err
		}
	}
	return nil
}

// giveBack returns the costs taken for a request that was not sent.
func (x *exchange) giveBack(taken bool) {
	x.untake()
	if x.burst != 0 {
		x.t.bursts.Leave(x.g.g, x.costs, x.burst)
		x.burst = 0
	}
	switch {
	case !taken:
	case x.p != nil:
		x.p.Cancel()
		x.p = nil
	case x.g.tk != nil:
		x.g.tk.Settle(x.costs, make([]int64, len(x.costs)))
	}
}

// waitPause waits until no limit of the Gate is paused (as its Status
// says; a Gate that is no Meter pauses its own callers).
func (x *exchange) waitPause() error {
	for {
		until := gatePause(x.g)
		d := x.g.clock.Until(until)
		if until.IsZero() || d <= 0 {
			return nil
		}
		timer := x.g.clock.NewTimer(d)
		select {
		case <-timer.Chan():
		case <-x.ctx.Done():
			timer.Stop()
			return x.ctx.Err()
		}
	}
}

// gatePause is the end of the latest pause in force on a limit of g, zero
// if none or if g is no Meter.
func gatePause(g *gate) time.Time {
	if g.meter == nil {
		return time.Time{}
	}
	return ledger.LatestPause(g.meter.Status(nil))
}

// dropLast discards the response kept from the previous attempt.
func (x *exchange) dropLast() {
	if x.last != nil {
		discardResponse(x.last)
		x.last = nil
	}
}

// keepBytes is the most of a retried response's body that is kept, so that
// the response can still be returned if the retry cannot take place.
const keepBytes = 16 << 10

// drainBytes is the most of a discarded body that is read, so that its
// connection can be reused.
const drainBytes = 4 << 10

// keepLast reads the body of the response kept for a retry into memory and
// closes it, releasing its connection and in-flight slot while the retry
// waits. A body too long to keep is discarded with its response.
func (x *exchange) keepLast() {
	r := x.last
	if r == nil {
		return
	}
	if pb, ok := r.Body.(*headers.PeekedBody); ok && !pb.Complete() {
		// The rest may never come: reading on could block.
		r.Body.Close()
		x.last = nil
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, keepBytes+1))
	r.Body.Close()
	if err != nil || len(b) > keepBytes {
		x.last = nil
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
}

// discardResponse drains a little of a response body, for connection
// reuse, and closes it.
func discardResponse(r *http.Response) {
	io.CopyN(io.Discard, r.Body, drainBytes)
	r.Body.Close()
}

// closeRequestBody closes the body of a request that will not be sent: the
// RoundTripper contract makes that the transport's job.
func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// releaseBody frees an in-flight slot when the response body is closed.
type releaseBody struct {
	io.ReadCloser
	release func()
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}
