package ledger

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

// Refusals is a client's memory of the calls refused without a usable
// wait, and the pauses it makes for them.
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
type Refusals struct {
	// Active counts the calls remembered, so that with none a request
	// reads no lock and hashes nothing; only Refusals writes it.
	Active atomic.Int64
	mu     sync.Mutex
	seed   maphash.Seed
	calls  map[uint64]refusedCall
	rand   *rand.Rand // the jitter
}

// NewRefusals returns an empty memory.
func NewRefusals() *Refusals {
	return &Refusals{seed: maphash.MakeSeed(), rand: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// SeedJitter makes the jitter of the pauses come from a generator seeded
// with seed, so that a test knows each pause.
func (p *Refusals) SeedJitter(seed uint64) {
	p.mu.Lock()
	p.rand = rand.New(rand.NewPCG(seed, seed))
	p.mu.Unlock()
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
func (p *Refusals) callKey(req *http.Request) (key uint64, hasBody, ok bool) {
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

// Refused records a refusal of req, at now, that named no usable wait and
// returns the pause for it.
func (p *Refusals) Refused(req *http.Request, now time.Time) time.Duration {
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
	p.Active.Store(int64(len(p.calls)))
	return d
}

// Pause returns the pause for the step-th refusal of a call (0 for its
// first), as Refused would make it.
func (p *Refusals) Pause(step int) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pause(step)
}

// pause is Pause with p.mu held: the SDKs' back-off for the retry that
// follows it, from backoff.ExponentialBackOff without its own jitter,
// times a share between refusalLow and refusalHigh.
func (p *Refusals) pause(step int) time.Duration {
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
	share := refusalLow + (refusalHigh-refusalLow)*p.rand.Float64()
	return time.Duration(float64(d) * share)
}

// Succeeded forgets every refused call: a success resets the schedule.
// Callers skip it when Active is 0.
func (p *Refusals) Succeeded() {
	p.mu.Lock()
	clear(p.calls)
	p.Active.Store(0)
	p.mu.Unlock()
}

// RetryOf reports whether req is the retry of a call refused without a
// usable wait (the same method, URL and body as that call, and for a
// request without a body, which many calls share, an SDK's retry header
// too), and until when that call's own pause lasts. Callers skip it when
// Active is 0.
func (p *Refusals) RetryOf(req *http.Request) (until time.Time, ok bool) {
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
