package grpcthrottle

import (
	"context"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/pool"
)

// Client holds the interceptors that keep a gRPC client's calls under the
// Gates its Pick chooses, and react to what servers say when refusing.
//
// Before a call is sent, its interceptor takes a permit for the call's
// costs (WithCost; 1 on every limit by default) from the Gate, with the
// call's context: it waits out any pause and queues in FIFO order with
// every other call of the Gate; a context that ends first, or whose
// deadline comes before the turn, fails the call unsent, spending nothing,
// with a *GateError (codes.DeadlineExceeded or codes.Canceled).
//
// A call that succeeds keeps its permit, settled from the reply by
// WithSettle if set. Without WithSettle, a Gate that is a throttle.Taker
// (a Limiter) gives its costs without a Permit, so that a call admitted
// at once allocates nothing. A call refused by its server (see Refused: a
// codes.ResourceExhausted, or a codes.Unavailable carrying a
// google.rpc.RetryInfo), in this order:
//   - with a RetryInfo, pauses the Gate, if it is a throttle.Pauser, until
//     the retry_delay, capped at the MaxPause, so that every call of the
//     Gate waits, not only the refused one;
//   - gives its permit back, since the server spent nothing on it: after
//     the pause, so that no call waiting for it is sent before the pause;
//   - if the Gate is a throttle.Leveler: with a google.rpc.QuotaFailure,
//     empties each limit its violations name (by quota_id, quota_metric or
//     subject, against the limits' names), since the server says it is
//     spent, whatever the local level says; after a pause, brings every
//     other limit the call costs down to that cost, so that one call goes
//     when the pause ends and the others follow at the Gate's rate, not in
//     a burst of what the refused calls gave back.
//
// A refused unary call is then sent again, taking a new permit behind the
// pause, ahead of the calls that queued after it was first sent (with
// throttle.WithPriority's highest priority, and its bound: it passes no
// waiter already passed 16 times), when all of these hold: it carried a RetryInfo whose delay is
// within the MaxPause; the delay fits the context's deadline; and the
// attempts made so far, grpc-go's own retries included, leave room for
// another round within 1+WithRetries attempts. A round counts as one
// attempt, or as the retryPolicy's maxAttempts when the method's service
// config has grpc-go retry the refusal's code itself (see the package
// documentation: which layer retries). Otherwise, or if the new permit
// cannot be had (the deadline comes before its turn), the call returns the
// server's status as it is. Any other error is returned as it is, and the
// call keeps its permit: the server may have spent it.
//
// A refused call slows its Gate down when the Gate lets through more than
// the server admits, a congestion-control rule: a RetryInfo longer than
// the time the Gate's rate takes to refill the call's costs halves every
// limit's rate and capacity (the capacity never below the largest cost
// seen), once for all the calls sent before the halving, since they are
// refused together; a shorter one, which a Gate at exactly the server's
// rate meets by timing alone, is forgiven once in every 16 answers and
// otherwise lowers the rates by a sixteenth of the configuration. After
// RecoverAfter without a slow-down, each success raises them a sixteenth,
// up to the configuration, which the Gate then has exactly. The Gate must
// be a *throttle.Limiter whose limits have distinct names (its buckets'
// rates and capacities are set) or a throttle.Tuner; Stats counts what
// the rule did. At most 1024 Gates are slowed at once.
//
// A Client's first unary calls go in a slow start: half the burst of the
// first Gate it sees, in calls of their cost, then half of what is still
// unconfirmed per success, until the first refusal or a confirmed burst
// (the burst is a claim no answer has checked yet; see docs/grpc.md).
// WithoutSlowStart turns it off.
//
// A stream takes a permit for its costs (req nil) when it opens, given back
// if it cannot open or its server refuses it; it is never re-sent, since
// its messages are the caller's: a stream refused when it opens fails with
// the server's status. WithMessageCost meters its messages too.
//
// Time (pauses, deadlines) is read on the WithClock clock, which should be
// the clock of the Gates' buckets.
type Client struct {
	c *config
}

// NewClient returns the interceptors of a client whose calls go through
// the Gates pick chooses. A nil pick limits nothing.
func NewClient(pick Pick, opts ...Option) *Client {
	return &Client{c: newConfig(clientSide, pick, opts)}
}

// UnaryClientInterceptor returns the interceptor of unary calls, for
// grpc.WithChainUnaryInterceptor.
func (cl *Client) UnaryClientInterceptor() grpc.UnaryClientInterceptor { return cl.unary }

// StreamClientInterceptor returns the interceptor of streams, for
// grpc.WithChainStreamInterceptor.
func (cl *Client) StreamClientInterceptor() grpc.StreamClientInterceptor { return cl.stream }

// DialOptions returns both interceptors as options of grpc.NewClient.
func (cl *Client) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(cl.unary),
		grpc.WithChainStreamInterceptor(cl.stream),
	}
}

func (cl *Client) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c := cl.c
	g, err := c.pick(ctx, method, req)
	if err != nil {
		return fmt.Errorf("grpcthrottle: %s: choosing the gate: %w", method, err)
	}
	if g == nil {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	costs, err := c.costs(ctx, method, req, g)
	if err != nil {
		return fmt.Errorf("grpcthrottle: %s: the call's cost: %w", method, err)
	}
	if free(costs) {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	var rec *attempts
	if policyRetriesQuota(cc, method) {
		// For StatsHandler, if installed: grpc-go retries below.
		rec = &attempts{Context: ctx, g: g}
		ctx = rec
	}
	sent := 0
	resend := false // ctx carries resendPriority
	var last error  // the server's refusal, to return if no re-send follows
	tk := c.taker(g, false)
	for {
		h, err := c.admit(ctx, g, tk, costs)
		if err != nil {
			if last != nil {
				return last
			}
			return &GateError{Method: method, Err: err}
		}
		mg, sendCtx := c.member(ctx, g, &h, costs)
		if rec != nil {
			rec.g = mg
		}
		err = invoker(sendCtx, method, req, reply, cc, opts...)
		var r Refusal
		refused := false
		if err != nil {
			r, refused = Refused(err)
		}
		c.slow.heard(!refused)
		if err == nil {
			if h.p != nil {
				c.settleReply(method, reply, h.p)
			}
			if h.t != nil {
				c.succeeded(h.t, h.ep)
			}
			return nil
		}
		if !refused {
			return err
		}
		c.refused(mg, r, rec, costs, h)
		round := policyAttempts(cc, method, r.Code)
		sent += round
		if !c.resends(ctx, g, mg, r, costs) || sent+round > 1+c.retries {
			return err
		}
		last = err
		if _, ok := mg.(throttle.Pauser); !ok {
			// Nothing holds the next Acquire: wait here.
			if c.sleep(ctx, r.RetryDelay) != nil {
				return last
			}
		}
		c.stats.resent.Add(1)
		if !resend {
			// The call was first in line when it was sent: it goes back
			// ahead of the calls that queued after it (see
			// throttle.WithPriority for the bound on overtaking).
			ctx, resend = throttle.WithPriority(ctx, resendPriority), true
		}
	}
}

// resends reports whether a call refused with r on mg, the member of g
// that served it (g itself if g is no pool), may be sent again: it needs a
// RetryInfo, and the wait for the next permit within the MaxPause and the
// deadline. A pool sends it through the member that serves soonest, not
// necessarily after the refused one's pause.
func (c *config) resends(ctx context.Context, g, mg throttle.Gate, r Refusal, costs []int64) bool {
	if r.RetryDelay < 0 {
		return false
	}
	wait := r.RetryDelay
	if mg != g {
		if w, err := g.WaitTime(costs...); err == nil {
			wait = min(wait, w)
		}
	}
	return wait <= c.maxPause && c.fits(ctx, wait)
}

// admit takes costs from g for one attempt of a unary call, as a Permit,
// or from tk if not nil, and returns what the attempt holds.
func (c *config) admit(ctx context.Context, g throttle.Gate, tk throttle.Taker, costs []int64) (held, error) {
	if err := c.slow.enter(ctx, g, costs); err != nil {
		return held{}, err
	}
	t, ep := c.epoch(g, costs)
	h := held{tk: tk, t: t, ep: ep}
	var err error
	if tk != nil {
		_, err = tk.Take(ctx, costs...)
	} else {
		h.p, err = g.Acquire(ctx, costs...)
	}
	if err != nil {
		c.slow.leave()
	}
	return h, err
}

// member returns the Gate an attempt holding h is sent under, and the
// context it is sent with: for a pool's permit, the member that served it
// (whose tuning epoch h then records), its route (WithRoutes) applied, so
// that the server's answer is heeded on that member alone; else g and ctx.
func (c *config) member(ctx context.Context, g throttle.Gate, h *held, costs []int64) (throttle.Gate, context.Context) {
	pm, ok := h.p.(*pool.Permit)
	if !ok {
		return g, ctx
	}
	m := pm.Member()
	h.t, h.ep = c.epoch(m.Gate, costs)
	if route := c.routes[m.Name]; route != nil {
		ctx = route(ctx)
	}
	return m.Gate, ctx
}

// held is what a unary call holds of its Gate while it is sent: its
// permit, or costs taken from a Taker, and the epoch it was sent in.
type held struct {
	p  throttle.Permit
	tk throttle.Taker
	t  *tuning
	ep uint64
}

// giveBack returns the costs h holds to the Gate.
func (h held) giveBack(costs []int64) {
	if h.p != nil {
		_ = h.p.Cancel()
	} else {
		_ = h.tk.Settle(costs, make([]int64, len(costs)))
	}
}

// refused applies a server's refusal r of a unary call holding h to its
// Gate g (see Client for the order, and why).
func (c *config) refused(g throttle.Gate, r Refusal, rec *attempts, costs []int64, h held) {
	// The pause comes before the give-back: a give-back serves the queue,
	// and a waiter served before the pause began would be sent into the
	// refusal.
	if rec == nil || !rec.heeded.Swap(false) {
		c.pause(g, r)
	}
	h.giveBack(costs)
	c.level(g, r, costs)
	c.stats.refused.Add(1)
	if r.RetryDelay > 0 {
		// The server admits less than the Gate lets through.
		c.lower(g, h.t, h.ep, costs, r.RetryDelay)
	}
}

// resendPriority is the priority of a re-sent call: above any a caller
// gives, since every call queued now came after it.
const resendPriority = math.MaxInt

// settleReply settles p from a unary call's reply, if WithSettle asks to.
// An error of Settle (a SettleFunc giving the wrong number of costs, a
// permit the handler settled already) leaves the permit as it was.
func (c *config) settleReply(method string, reply any, p throttle.Permit) {
	if c.settle == nil {
		return
	}
	if actual := c.settle(method, reply, p.Costs()); actual != nil {
		_ = p.Settle(actual...)
	}
}

// heed applies a server's refusal to g at once, as grpc-go's attempt
// ends: the pause first, then the levels (see pause and level).
func (c *config) heed(g throttle.Gate, r Refusal) {
	c.pause(g, r)
	c.level(g, r, nil)
}

// pause pauses g, if it is a throttle.Pauser, for the delay of a refusal's
// RetryInfo, capped at the MaxPause.
func (c *config) pause(g throttle.Gate, r Refusal) {
	if p, ok := g.(throttle.Pauser); ok && r.RetryDelay > 0 {
		p.PauseUntil(c.clock.Now().Add(min(r.RetryDelay, c.maxPause)))
	}
}

// level lowers the limits of g, if it is a throttle.Leveler, after a
// refusal: those its QuotaFailure names to 0, since the server says they
// are spent; and, after a pause (a RetryInfo), each limit the refused call
// costs to that cost, so that when the pause ends one call goes, not a
// burst of what the refused calls gave back, which the server would refuse
// in turn. costs nil (a refusal seen by the StatsHandler, whose call still
// holds its costs) lowers only the named limits.
func (c *config) level(g throttle.Gate, r Refusal, costs []int64) {
	if len(r.Violations) == 0 && (costs == nil || r.RetryDelay <= 0) {
		return
	}
	lv, ok := g.(throttle.Leveler)
	if !ok {
		return
	}
	for i, l := range g.Limits() {
		named := false
		for _, v := range r.Violations {
			if names(v, l.Name) {
				named = true
				break
			}
		}
		switch {
		case named:
			lv.Lower(i, 0)
		case r.RetryDelay > 0 && i < len(costs) && costs[i] > 0:
			lv.Lower(i, costs[i])
		}
	}
}

// policyAttempts is how many attempts one round of a call of method makes
// at most when it ends with code: the retryPolicy's maxAttempts if the
// ClientConn's service config has grpc-go retry that code itself, else 1.
// (grpc.WithDisableRetry is not visible here: the count is then an upper
// bound, and the interceptor re-sends less than it could.)
func policyAttempts(cc *grpc.ClientConn, method string, code codes.Code) int {
	if cc == nil {
		return 1
	}
	rp := cc.GetMethodConfig(method).RetryPolicy
	if rp == nil || !rp.RetryableStatusCodes[code] || rp.MaxAttempts < 1 {
		return 1
	}
	return rp.MaxAttempts
}

// fits reports whether waiting d leaves the context's deadline unpassed.
func (c *config) fits(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || !c.clock.Now().Add(d).After(deadline)
}

// sleep waits d on the clock, or until ctx ends.
func (c *config) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
