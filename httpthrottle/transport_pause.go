package httpthrottle

import (
	"hash/maphash"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// The pause after a refusal that names no usable wait.
//
// A 429 without Retry-After, or with one that is zero, negative, in the
// past or garbage, says "slow down" without saying how much. Waiting
// nothing would let every caller, and the refused call's own retry, go
// straight back to a server that just refused them; a flat pause paced
// each of an SDK's own retries on top of the SDK's back-off. So such a
// refusal pauses the Limiter on the schedule the vendors' SDKs back off on
// by themselves (openai-go and anthropic-sdk-go: 0.5 s doubling per retry,
// capped at 8 s, less up to a quarter of jitter), taken at the low end of
// their jitter: the pause always ends before the SDK's own retry comes,
// so the retry finds the Limiter open, while every other caller waits the
// pause out.
//
// The step on that schedule is the refused call's own: the retry count
// X-Stainless-Retry-Count carries, or for a request without it how many
// such refusals the same call has had (the same method, URL and body, as
// a client resends it), so that calls refused together in a burst pause
// once, not once each on a growing schedule, and a new call of an SDK
// (count 0) starts the schedule even when its body repeats an earlier
// call's. A success forgets every refused call: the
// next refusal starts the schedule again.
//
// The retry of a refused call (one the Transport recognises by its method,
// URL and body, and, for a request without a body, by an SDK's retry
// header) waits out the pause its own refusal asked for, which its SDK's
// back-off has usually done already, but not the pauses of other calls'
// refusals, nor the queue of the calls that waited for them: its cost is
// taken as debt when the buckets do not hold it. Those calls refused
// together each come back after their own back-off; made to wait each
// other's pauses and the configured rate, a call the server keeps refusing
// would cost more time than the SDK alone spends on it.

const (
	// refusalStart and refusalCap are the SDKs' first back-off and cap.
	refusalStart = 500 * time.Millisecond
	refusalCap   = 8 * time.Second
	// The pause is this share of the SDKs' schedule, jittered between
	// them: below the least of the SDKs' jitter (three quarters), so the
	// SDK's own retry never waits on the pause.
	refusalLow, refusalHigh = 0.6, 0.75
	// refusedCallsMax bounds the refused calls remembered; past it the
	// oldest are forgotten with the rest, as after a success.
	refusedCallsMax = 4096
)

// refusalPauses is a Transport's memory of the calls refused without a
// usable wait, and the jitter of their pauses.
type refusalPauses struct {
	// active counts the calls remembered, so that with none a request
	// reads no lock and hashes nothing.
	active atomic.Int64
	mu     sync.Mutex
	seed   maphash.Seed
	calls  map[uint64]refusedCall
	rand   *rand.Rand // the jitter; tests seed it
}

// refusedCall is what is remembered of a call refused without a usable
// wait.
type refusedCall struct {
	refusals int       // so far
	until    time.Time // the end of the pause its last refusal asked for
}

// maxKeyBody is the most of a body hashed into a call's key.
const maxKeyBody = 8 << 20

// callKey identifies a call across its attempts: the method, the URL and
// the body, read through GetBody. ok is false when the body cannot be read
// again (the call cannot be retried anyway).
func (p *refusalPauses) callKey(req *http.Request) (key uint64, hasBody, ok bool) {
	var h maphash.Hash
	h.SetSeed(p.seed)
	h.WriteString(req.Method)
	h.WriteString(" ")
	h.WriteString(req.URL.String())
	if req.Body == nil || req.Body == http.NoBody {
		return h.Sum64(), false, true
	}
	if req.GetBody == nil {
		return 0, true, false
	}
	rc, err := req.GetBody()
	if err != nil {
		return 0, true, false
	}
	defer rc.Close()
	h.WriteString("\n")
	if _, err := io.Copy(&h, io.LimitReader(rc, maxKeyBody)); err != nil {
		return 0, true, false
	}
	return h.Sum64(), true, true
}

// sdkRetry returns the retry count an SDK that retries on its own sends
// with each attempt (0 on the first), and -1 when the request carries
// none.
func sdkRetry(req *http.Request) int {
	v := req.Header.Get("X-Stainless-Retry-Count")
	if v == "" {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// refused records a refusal of req, at now, that named no usable wait and
// returns the pause for it (see the comment at the top of the file).
func (p *refusalPauses) refused(req *http.Request, now time.Time) time.Duration {
	step := max(sdkRetry(req), 0)
	key, _, ok := p.callKey(req)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !ok {
		return p.pause(step)
	}
	if p.calls == nil || len(p.calls) >= refusedCallsMax {
		p.calls = make(map[uint64]refusedCall)
	}
	if sdkRetry(req) < 0 {
		step = p.calls[key].refusals
	}
	d := p.pause(step)
	p.calls[key] = refusedCall{refusals: step + 1, until: now.Add(d)}
	p.active.Store(int64(len(p.calls)))
	return d
}

// pause returns the pause for the step-th refusal of a call (0 for its
// first): the SDKs' back-off for the retry that follows it, from
// backoff.ExponentialBackOff without its own jitter, times a share between
// refusalLow and refusalHigh. p.mu held.
func (p *refusalPauses) pause(step int) time.Duration {
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(refusalStart),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxInterval(refusalCap),
		backoff.WithMaxElapsedTime(0),
	)
	d := b.NextBackOff()
	// Past a handful of steps the cap has been reached.
	for range min(step, 16) {
		d = b.NextBackOff()
	}
	if p.rand == nil {
		p.rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	share := refusalLow + (refusalHigh-refusalLow)*p.rand.Float64()
	return time.Duration(float64(d) * share)
}

// succeeded forgets every refused call: a success resets the schedule.
// Callers skip it when no call is refused (active is 0).
func (p *refusalPauses) succeeded() {
	p.mu.Lock()
	clear(p.calls)
	p.active.Store(0)
	p.mu.Unlock()
}

// retryOf reports whether req is the retry of a call refused without a
// usable wait (the same method, URL and body as that call, and for a
// request without a body, which many calls share, an SDK's retry header
// too), and until when that call's own pause lasts. Callers skip it when
// no call is refused (active is 0).
func (p *refusalPauses) retryOf(req *http.Request) (until time.Time, ok bool) {
	// An SDK's count says which attempt this is: its first is a new call,
	// however like an earlier one.
	n := sdkRetry(req)
	if n == 0 {
		return time.Time{}, false
	}
	key, hasBody, ok := p.callKey(req)
	if !ok || !hasBody && n < 1 {
		return time.Time{}, false
	}
	p.mu.Lock()
	c, found := p.calls[key]
	p.mu.Unlock()
	return c.until, found
}

// usableWait reports whether d, a server's wait on a refusal, is one to
// pause for: a wait of zero (a Retry-After of 0, or a date in the past) is
// no more usable than none.
func usableWait(d time.Duration, ok bool) bool { return ok && d > 0 }

// takeRetry takes the costs of a recognised retry (see the comment at the
// top of the file): once its own call's pause is over, at once, charged
// as debt when the limits do not hold them (or are paused by another
// call's refusal: the retry has already waited the back-off its own
// refusal asked for, and a later pause of another call would add to it).
// A Gate that is no Taker cannot be charged: the retry then waits its
// turn there.
func (x *exchange) takeRetry(until time.Time) (int64, error) {
	start := x.now()
	if d := x.g.clock.Until(until); d > 0 {
		timer := x.g.clock.NewTimer(d)
		select {
		case <-timer.Chan():
		case <-x.ctx.Done():
			timer.Stop()
			return 0, x.ctx.Err()
		}
	}
	tk := x.g.tk
	if tk == nil {
		if _, err := x.take(x.ctx); err != nil {
			return 0, err
		}
		return x.now() - start, nil
	}
	if ok, err := tk.TryAcquire(x.costs...); err != nil {
		return 0, err
	} else if !ok {
		tk.Settle(make([]int64, len(x.costs)), x.costs)
	}
	return x.now() - start, nil
}
