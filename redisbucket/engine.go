package redisbucket

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
)

// engine is what Bucket and Limiter share: one limiter id, its limits, the
// script calls, the breaker, the failure policy and the local FIFO queue.
type engine struct {
	client redis.UniversalClient
	id     string
	key    string // <prefix>{<id>}
	keys   []string
	limits []shape
	o      options
	br     *breaker
	cl     *clusterWatch // for a cluster client; nil otherwise
	// guard runs each call in a goroutine of its own and returns at the
	// deadline: the client's context deadlines do not reach its sockets.
	guard bool

	fastArgs [3]any // the fast path's capacity, num and den (limits[0])
	dl       deadlines

	local   *throttle.Limiter // FailLocal; nil for the other policies
	localBs []*throttle.Bucket

	// line admits one Acquire at a time to call Redis and sleep; the others
	// wait in its FIFO queue. waiting counts the Acquire callers that were
	// refused once, so TryAcquire does not jump ahead of them.
	line    fifo
	waiting atomic.Int64
	share   atomic.Int64 // the fleet count the local buckets are sized for

	seen seen // the levels last seen and what the failure policy granted since
	// tuned is the mask of limits (bit i for limit i < 50) the last reply
	// said run at a server's quota (Limiter.Tune).
	tuned atomic.Int64
	fl    *fleet
	pz    pauses       // the latest pause a reply reported, for reserved sleepers
	heard atomic.Int64 // when the last reply's call was sent, local Unix ns
	batch batcher      // coalesces concurrent fast-path calls (coalesce.go)

	st counters
}

type counters struct {
	calls, callErrors, decisions, granted, leaseServed,
	failureDecisions, failureGranted, breakerOpens, stateResets atomic.Int64
}

// Stats counts what a Bucket or Limiter did since it was created.
type Stats struct {
	Calls            int64 // script calls sent to Redis, failed ones included (the constructor's check is not counted); one call may decide several concurrent acquisitions
	CallErrors       int64 // calls that failed or timed out
	Decisions        int64 // TryAcquire and Acquire outcomes (grants and refusals), however taken
	Granted          int64 // decisions that granted
	LeaseServed      int64 // decisions served from leased tokens, without a call
	FailureDecisions int64 // decisions taken by the failure policy
	FailureGranted   int64 // of those, how many granted
	BreakerOpens     int64 // times the circuit breaker opened
	StateResets      int64 // times the script found garbage state and restarted the limits empty
}

func newEngine(client redis.UniversalClient, id string, limits []shape, opts []Option) (*engine, error) {
	if client == nil {
		return nil, errors.New("redisbucket: nil client")
	}
	if id == "" || strings.Contains(id, "}") {
		return nil, fmt.Errorf("redisbucket: limiter id %q must be non-empty and contain no }: it is the key's hash tag", id)
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	e := &engine{
		client: client, id: id, key: o.prefix + "{" + id + "}", limits: limits, o: o,
		br: newBreaker(o.probeMin, o.probeMax),
	}
	e.keys = []string{e.key}
	e.batch.max, e.batch.spacing = maxInFlight(client), callSpacing
	// Boxed once: a string put in an interface is an allocation per call.
	e.fastArgs = [3]any{limits[0].args[0], limits[0].args[1], limits[0].args[2]}
	if cc, ok := client.(*redis.ClusterClient); ok {
		e.cl = &clusterWatch{c: cc, key: e.key}
	}
	e.guard = !honoursDeadlines(client)
	if !o.policySet {
		o.policy = FailLocal()
	}
	e.o.policy = o.policy
	if o.policy.mode == ModeFailLocal {
		e.localBs, err = o.policy.localBuckets(limits, throttle.WithClock(o.clock))
		if err != nil {
			return nil, err
		}
		if e.local, err = throttle.NewLimiter(e.localBs...); err != nil {
			return nil, err
		}
		if o.fleetTTL > 0 && len(o.policy.rates) < len(limits) {
			e.fl = newFleet(e.key, o.fleetTTL)
		}
	} else if len(o.policy.rates) > 0 {
		return nil, invalidOption("WithFailurePolicy: a policy with rates that is not FailLocal")
	}
	return e, nil
}

func (e *engine) stats() Stats {
	return Stats{
		Calls: e.st.calls.Load(), CallErrors: e.st.callErrors.Load(), Decisions: e.st.decisions.Load(),
		Granted: e.st.granted.Load(), LeaseServed: e.st.leaseServed.Load(),
		FailureDecisions: e.st.failureDecisions.Load(), FailureGranted: e.st.failureGranted.Load(),
		BreakerOpens: e.st.breakerOpens.Load(), StateResets: e.st.stateResets.Load(),
	}
}

// result is a script reply.
type result struct {
	status int64 // 1 granted, 0 denied, -1 never, 2 already applied
	wait   time.Duration
	amount int64
	now    int64   // the server time the script used, µs
	flags  int64   // 1 garbage state reset, 2 key rebuilt from the client's view
	live   int64   // live fleet members, when this call registered
	paused int64   // the end of a pause in force, server µs, or 0
	levels []int64 // tok, rem per limit
}

const replyHead = 7

// call runs the script once, bounded by the call timeout. It brings the
// client's view of the levels (for a key that vanished), what the failure
// policy granted since the last call that reached Redis, and, when due,
// the fleet registration.
func (e *engine) call(ctx context.Context, mode string, permit string, a, b []int64, share int64, ttl time.Duration, extra ...any) (result, error) {
	return e.callAt(ctx, e.o.clock.Now(), mode, permit, a, b, share, ttl, extra...)
}

// timeArg is the script's time argument: "" for the server's TIME, or the
// time a test set (see serverTime) in µs.
func (e *engine) timeArg() string {
	if e.o.serverTime == nil {
		return ""
	}
	return strconv.FormatInt(e.o.serverTime().UnixMicro(), 10)
}

// callAt is call for a caller that has just read the clock: local.
// (The clock is read per decision once: a real clock's Now costs about a
// tenth of what the library adds to a call on this machine's VM.) extra
// follows the per-limit arguments (mode t's).
func (e *engine) callAt(ctx context.Context, local time.Time, mode string, permit string, a, b []int64, share int64, ttl time.Duration, extra ...any) (result, error) {
	keys := e.keys
	permitTTL := ""
	if permit != "" {
		keys = []string{e.key, e.key + ":p:" + permit}
		if mode == "s" {
			ttl = min(ttl, time.Minute)
		}
		permitTTL = strconv.FormatInt(ttl.Milliseconds(), 10)
	}
	now := e.timeArg()
	hint, charge, owed, sent := e.seen.get(local)
	member, fleetTTL := "", ""
	if e.fl != nil && e.fl.due(local) {
		member, fleetTTL = e.fl.member, e.fl.ttlArg
		keys = append(keys[:len(keys):len(keys)], e.fl.key)
	}
	if mode == "a" && permit == "" && charge == "" && member == "" && len(e.limits) == 1 && e.limits[0].unit == 1 {
		return e.decideFast(ctx, local, now, hint, sent, a[0])
	}
	args := e.argv(keys, 9+6*len(e.limits)+len(extra))
	args = append(args, mode, now, len(e.limits), permitTTL, share, hint, charge, member, fleetTTL)
	for i, l := range e.limits {
		var bi int64
		if b != nil {
			bi = b[i]
		}
		args = append(args, l.args[0], l.args[1], l.args[2], l.args[3], a[i], bi)
	}
	args = append(args, extra...)
	cctx, cancel := e.callCtx(ctx)
	defer cancel()
	e.st.calls.Add(1)
	v, err := e.run(cctx, args)
	if err == nil && len(v) != replyHead+2*len(e.limits) {
		err = fmt.Errorf("redisbucket: script replied %d values, want %d", len(v), replyHead+2*len(e.limits))
	}
	if err != nil {
		e.st.callErrors.Add(1)
		if member != "" {
			e.fl.failed()
		}
		return result{}, err
	}
	res := result{status: v[0], wait: time.Duration(v[1]) * time.Microsecond, amount: v[2], now: v[3], flags: v[4], live: v[5], paused: v[6], levels: v[replyHead:]}
	e.pz.saw(res.paused)
	e.heard.Store(local.UnixNano())
	e.seen.set(e.limits, local, res.now, res.levels, owed, sent)
	e.tuned.Store(res.flags >> 2)
	if res.flags&1 != 0 {
		e.st.stateResets.Add(1)
	}
	if member != "" {
		e.fl.registered(res.live)
		e.shareChanged(res.live)
	}
	return res, nil
}

// callFast is call on the script's fast path: one limit in µs, an
// acquisition without permit, charge or registration, with five arguments
// and a four-value reply (five when the script fell through to its general
// path, the fifth its flags).
func (e *engine) callFast(ctx context.Context, local time.Time, now string, hint []byte, sent uint64, cost int64) (result, error) {
	cctx, cancel := e.callCtx(ctx)
	defer cancel()
	e.st.calls.Add(1)
	args := e.argv(e.keys, 6)
	args = append(args, e.fastArgs[0], e.fastArgs[1], e.fastArgs[2], cost, hint)
	if now != "" {
		args = append(args, now)
	}
	v, err := e.run(cctx, args)
	if err == nil && len(v) != 4 && len(v) != 5 {
		err = fmt.Errorf("redisbucket: script replied %d values, want 4 or 5", len(v))
	}
	if err != nil {
		e.st.callErrors.Add(1)
		return result{}, err
	}
	// The fraction is not in the reply: an acquisition reports whole
	// tokens only, and one limit binds.
	res := result{status: v[0], wait: time.Duration(v[1]) * time.Microsecond, now: v[2], levels: []int64{v[3], 0}}
	if len(v) == 5 {
		res.flags = v[4]
	}
	e.tuned.Store(res.flags >> 2)
	e.seen.set(e.limits, local, res.now, res.levels, nil, sent)
	e.heard.Store(local.UnixNano())
	if res.flags&1 != 0 {
		e.st.stateResets.Add(1)
	}
	return res, nil
}

// transient are the error replies of a server that is loading, failing
// over, out of memory or busy: the failure policy decides, as for a timeout.
var transient = []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY", "BUSY", "OOM", "NOREPLICAS", "NOTBUSY"}

// unavailable reports whether err means Redis cannot decide now (timeout,
// connection error, transient error reply) rather than a caller's cancelled
// context or a real error (an ACL refusal, a script bug).
func unavailable(ctx context.Context, err error) bool {
	select {
	case <-ctx.Done():
		return false
	default:
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		for _, p := range transient {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	return true
}

// staleConn reports whether err is what a pooled connection to a server
// that has since restarted gives: the peer closed or reset it.
func staleConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// decision is the outcome of one attempt.
type decision struct {
	granted bool
	never   bool          // a limit without refill cannot cover the cost
	wait    time.Duration // until it could pass, when denied
	limit   int           // index of the limit that binds the wait
	mode    Mode
	cause   error // in failure mode, the error that opened the breaker
	amount  int64 // lease size
	levels  []int64
	reset   bool            // the script found garbage state and restarted the limits empty
	at      int64           // the server time of the decision, µs; 0 when the failure policy took it
	local   throttle.Permit // under FailLocal, what the local buckets granted, to settle there
}

// decide takes one decision: by the script when the breaker lets it call,
// by the failure policy otherwise or when the call fails.
func (e *engine) decide(ctx context.Context, costs []int64, permit string) (decision, error) {
	now := e.o.clock.Now()
	res, fail, cause, err := e.attempt(ctx, now, "a", permit, costs, nil, 1, e.o.permitTTL)
	if err != nil {
		return decision{}, err
	}
	if fail {
		return e.fallback(costs, cause, now), nil
	}
	return e.fromResult(res, costs), nil
}

// attempt makes one script call if the breaker allows it, and settles the
// breaker whatever happens: a reply or an error reply from the server
// closes it, unavailability opens it (fail is then true, with the cause),
// and a call cut short by the caller's context releases the probe. It
// returns err for the caller's context or a real error.
func (e *engine) attempt(ctx context.Context, now time.Time, mode, permit string, a, b []int64, share int64, ttl time.Duration, extra ...any) (res result, fail bool, cause, err error) {
	call, probe, cause := e.br.allow(now)
	if !call {
		if e.cl != nil {
			e.cl.watch(ctx, now, e.br)
		}
		return result{}, true, cause, nil
	}
	res, err = e.callAt(ctx, now, mode, permit, a, b, share, ttl, extra...)
	if err != nil && unavailable(ctx, err) && (staleConn(err) || e.moved(ctx)) {
		// A pooled connection to a server that restarted since (it fails
		// once per connection), or a cluster that moved the key's slot to
		// a live node: try once more, within the same call timeout.
		res, err = e.call(ctx, mode, permit, a, b, share, ttl, extra...)
	}
	switch {
	case err == nil:
		e.br.success()
		if e.cl != nil {
			e.cl.healthy()
		}
		return res, false, nil, nil
	case unavailable(ctx, err):
		err = e.unavailableErr(err)
		if e.br.failure(now, err, probe) {
			e.st.breakerOpens.Add(1)
			e.opened()
		}
		return result{}, true, err, nil
	}
	if cerr := ctxErr(ctx); cerr != nil {
		e.br.abandon(probe)
		return result{}, false, nil, cerr
	}
	// The server answered, with an error: it is there.
	e.br.success()
	return result{}, false, nil, err
}

func (e *engine) fromResult(res result, costs []int64) decision {
	d := decision{mode: ModeRedis, levels: res.levels, amount: res.amount, reset: res.flags&1 != 0, at: res.now}
	switch res.status {
	case 1, 2:
		d.granted = true
	case -1:
		d.never = true
	default:
		d.wait = res.wait
	}
	if !d.granted {
		d.limit = e.binding(res.levels, costs)
	}
	return d
}

// binding returns the index of the limit that needs the longest wait.
func (e *engine) binding(levels []int64, costs []int64) int {
	best, bestWait := 0, int64(-1)
	for i, l := range e.limits {
		tok, rem := levels[2*i], levels[2*i+1]
		if costs[i] <= 0 || tok >= costs[i] {
			continue
		}
		if l.num == 0 {
			return i
		}
		// Values below 2^52 (shape.go): the product fits an int64.
		need := (costs[i]-tok)*l.den - rem
		w := (need + l.num - 1) / l.num * l.unit
		if w > bestWait {
			best, bestWait = i, w
		}
	}
	return best
}

// fallback decides by the failure policy.
func (e *engine) fallback(costs []int64, cause error, now time.Time) decision {
	d := decision{mode: e.o.policy.mode, cause: cause}
	untilProbe := max(e.br.openUntil().Sub(now), time.Millisecond)
	switch d.mode {
	case ModeFailOpen:
		d.granted = true
		e.seen.spent(costs)
	case ModeFailClosed:
		d.wait = untilProbe
	case ModeFailLocal:
		p, ok, err := e.local.TryAcquirePermit(costs...)
		switch {
		case ok:
			d.granted, d.local = true, p
			e.seen.spent(costs)
		case err != nil:
			// Above a local capacity: refused until Redis is back.
			d.wait = untilProbe
		default:
			w, err := e.local.WaitTime(costs...)
			if err != nil {
				w = untilProbe
			}
			d.wait = min(max(w, time.Nanosecond), untilProbe)
		}
	}
	return d
}

// count records a final decision and reports it to the observer.
func (e *engine) count(d decision, costs []int64, kind throttle.EventKind, wait time.Duration) {
	cause := d.cause
	if d.reset {
		cause = ErrStateReset
	}
	e.st.decisions.Add(1)
	if kind == throttle.EventGranted {
		e.st.granted.Add(1)
	}
	if d.mode == ModeLease {
		e.st.leaseServed.Add(1)
	}
	if d.mode.Failure() {
		e.st.failureDecisions.Add(1)
		if kind == throttle.EventGranted {
			e.st.failureGranted.Add(1)
		}
	}
	if e.o.obs == nil {
		return
	}
	for i, c := range costs {
		if c > 0 {
			e.o.obs.Observe(Event{Event: throttle.Event{Kind: kind, Limit: e.limits[i].name, Cost: c, Wait: wait},
				Mode: d.mode, Err: cause})
		}
	}
}

// costCount is the error for got costs given for want limits, as the core
// words it.
func costCount(got, want int) error {
	costs, limits := "costs", "limits"
	if got == 1 {
		costs = "cost"
	}
	if want == 1 {
		limits = "limit"
	}
	return fmt.Errorf("%w: got %d %s for %d %s", throttle.ErrInvalidCost, got, costs, want, limits)
}

// check validates costs like the core does.
func (e *engine) check(costs []int64) error {
	if len(costs) != len(e.limits) {
		return costCount(len(costs), len(e.limits))
	}
	any := false
	for i, c := range costs {
		if c < 0 || (len(costs) == 1 && c == 0) {
			return throttle.ErrInvalidCost
		}
		any = any || c > 0
		if c > e.limits[i].capacity {
			if e.limits[i].name == "" {
				return fmt.Errorf("%w: cost %d, capacity %d", throttle.ErrCostExceedsCapacity, c, e.limits[i].capacity)
			}
			return fmt.Errorf("limit %q: %w: cost %d, capacity %d", e.limits[i].name, throttle.ErrCostExceedsCapacity, c, e.limits[i].capacity)
		}
	}
	if !any {
		return throttle.ErrInvalidCost
	}
	return nil
}

// tryAcquire decides once and never waits; it refuses while local Acquire
// callers are queued, so it does not jump their queue.
func (e *engine) tryAcquire(ctx context.Context, costs []int64) (bool, error) {
	_, ok, err := e.tryDecide(ctx, costs, "")
	return ok, err
}

// tryDecide is tryAcquire under the permit id permit ("" for none),
// returning the decision as well.
func (e *engine) tryDecide(ctx context.Context, costs []int64, permit string) (decision, bool, error) {
	if err := e.check(costs); err != nil {
		return decision{}, false, err
	}
	if e.waiting.Load() > 0 {
		e.count(decision{}, costs, throttle.EventRejected, 0)
		return decision{}, false, nil
	}
	d, err := e.decide(ctx, costs, permit)
	if err != nil {
		return decision{}, false, err
	}
	kind := throttle.EventRejected
	if d.granted {
		kind = throttle.EventGranted
	}
	e.count(d, costs, kind, d.wait)
	return d, d.granted, nil
}

// acquire waits until the costs are granted: decide, and when refused,
// sleep on the injected clock for the wait the script returned, outside
// any lock, then decide again. Only the head of the local FIFO queue sleeps
// on a timer; the others wait on their own channel in the queue, so each
// grant wakes one goroutine.
func (e *engine) acquire(ctx context.Context, costs []int64, permit string, dec func(context.Context) (decision, error)) (decision, error) {
	if err := e.check(costs); err != nil {
		return decision{}, err
	}
	start := e.o.clock.Now()
	var d decision
	have := false
	if e.waiting.Load() == 0 {
		var err error
		if d, err = dec(ctx); err != nil {
			return d, err
		}
		if d.granted {
			e.count(d, costs, throttle.EventGranted, 0)
			return d, nil
		}
		if err := e.hopeless(ctx, d, costs); err != nil {
			return d, err
		}
		have = true
	}
	e.waiting.Add(1)
	defer e.waiting.Add(-1)
	if !e.line.tryAcquire() {
		have = false
		if err := e.line.acquire(ctx); err != nil {
			e.count(d, costs, throttle.EventCancelled, e.o.clock.Since(start))
			return d, err
		}
	}
	defer e.line.release()
	for {
		if !have {
			var err error
			if d, err = dec(ctx); err != nil {
				if ctxErr(ctx) != nil {
					e.count(d, costs, throttle.EventCancelled, e.o.clock.Since(start))
				}
				return d, err
			}
			if d.granted {
				e.count(d, costs, throttle.EventGranted, e.o.clock.Since(start))
				return d, nil
			}
			if err := e.hopeless(ctx, d, costs); err != nil {
				return d, err
			}
		}
		have = false
		t := e.o.clock.NewTimer(d.wait)
		select {
		case <-ctx.Done():
			t.Stop()
			e.count(d, costs, throttle.EventCancelled, e.o.clock.Since(start))
			return d, ctx.Err()
		case <-t.Chan():
		}
	}
}

// hopeless returns the error that ends an Acquire refused with d: a limit
// that never refills, FailClosed, or a deadline before the wait ends.
func (e *engine) hopeless(ctx context.Context, d decision, costs []int64) error {
	var err error
	switch {
	case d.never:
		err = throttle.ErrCostExceedsCapacity
		if n := e.limits[d.limit].name; n != "" {
			err = fmt.Errorf("limit %q: %w", n, err)
		}
	case d.mode == ModeFailClosed:
		err = fmt.Errorf("failure policy FailClosed: %w", d.cause)
	default:
		if dl, ok := ctx.Deadline(); ok && dl.Sub(e.o.clock.Now()) < d.wait {
			err = &throttle.WaitError{Wait: d.wait, Limit: e.limits[d.limit].name}
		}
	}
	if err != nil {
		e.count(d, costs, throttle.EventRejected, d.wait)
	}
	return err
}

// view is what peek reports: the wait for some costs and every level.
type view struct {
	wait   time.Duration
	never  bool
	limit  int
	tokens []float64
}

// peek reads the levels and the wait for costs without writing. In failure
// mode it answers from the failure policy's view: FailOpen full, FailClosed
// empty, FailLocal the local buckets.
func (e *engine) peek(ctx context.Context, costs []int64) (view, error) {
	now := e.o.clock.Now()
	v := view{tokens: make([]float64, len(e.limits))}
	res, fail, _, err := e.attempt(ctx, now, "p", "", costs, nil, 1, e.o.permitTTL)
	if err != nil {
		return v, err
	}
	if !fail {
		d := e.fromResult(res, costs)
		v.wait, v.never, v.limit = d.wait, d.never, d.limit
		for i, l := range e.limits {
			v.tokens[i] = l.value(res.levels[2*i], res.levels[2*i+1])
		}
		return v, nil
	}
	untilProbe := max(e.br.openUntil().Sub(now), time.Millisecond)
	switch e.o.policy.mode {
	case ModeFailOpen:
		for i, l := range e.limits {
			v.tokens[i] = float64(l.capacity)
		}
	case ModeFailClosed:
		v.wait = untilProbe
	case ModeFailLocal:
		if slices.ContainsFunc(costs, func(c int64) bool { return c > 0 }) {
			w, err := e.local.WaitTime(costs...)
			if err != nil {
				w = untilProbe
			}
			v.wait = w
		}
		for i, b := range e.localBs {
			v.tokens[i] = b.Status().Level
		}
	}
	return v, nil
}

// newPermitID returns 128 random bits in hex.
func newPermitID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ctxErr is ctx.Err() without blocking: a clockwork fake-clock context's
// Err blocks until the context is done.
func ctxErr(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
		return nil
	}
}

// moved reports, for a cluster client, whether the key's slot now belongs
// to another node than the one the failed call went to; see cluster.go.
func (e *engine) moved(ctx context.Context) bool {
	if e.cl == nil {
		return false
	}
	return e.cl.moved(ctx, e.o.clock.Now())
}
