package redisbucket

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Lease configures lease mode (see WithLease).
type Lease struct {
	// Hold is the longest a leased token is kept: a token not used within
	// Hold of being taken is never used and goes back to Redis. The default
	// is one second. The burst bound of the shared limit becomes
	// capacity + rate*(window + Hold).
	Hold time.Duration
	// MaxBatch caps the tokens one lease takes. The default is an eighth of
	// the capacity, at least 1.
	MaxBatch int64
	// Share caps a lease beyond the request that triggers it at 1/Share of
	// the tokens left in Redis, so one process cannot strand the last tokens
	// while others go without. The default is 2.
	Share int64
}

// WithLease turns on lease mode for a Bucket: each process takes tokens in
// batches sized from its recent demand (about a quarter of Hold's worth)
// and from what Redis says remains, serves its requests from them without
// a call, and returns what it did not use after Hold. Requests refused by
// Redis are refused locally, without a call, until the wait Redis returned
// has passed. See the package documentation for the trade-off.
func WithLease(l Lease) Option { return func(o *options) { o.lease = &l } }

// leaser holds one Bucket's leased tokens.
type leaser struct {
	e       *engine
	hold    time.Duration
	horizon float64 // seconds of demand one lease covers
	max     int64
	share   int64
	// maxBackoff caps the local refusals: a quarter of Hold, and at most
	// half the time the bucket takes to fill from empty, so that tokens do
	// not pile up past the capacity, and go to waste, while every process
	// backs off.
	maxBackoff time.Duration

	mu        sync.Mutex
	batches   []*batch // in order of expiry
	rate      float64  // demand estimate, tokens per second
	last      time.Time
	denyUntil time.Time // requests of at least denyCost are refused locally until then
	denyCost  int64
	refusals  uint // consecutive refusals by Redis
	timer     clockwork.Timer
	gen       uint64 // counts armLocked calls: which timer is current
	timerAt   time.Time
	closed    bool
	returning sync.WaitGroup // expiry callbacks running
	fetch     sync.Mutex     // one lease request at a time per process

	returned func() // test hook: an expiry callback finished
}

type batch struct {
	id      string
	size    int64
	left    int64
	expires time.Time
}

func newLeaser(e *engine, cfg Lease) (*leaser, error) {
	c := e.limits[0].capacity
	if cfg.Hold == 0 {
		cfg.Hold = time.Second
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = max(1, c/8)
	}
	if cfg.Share == 0 {
		cfg.Share = 2
	}
	if cfg.Hold > maxTTL {
		return nil, invalidOption("WithLease: Hold %v is longer than %v: a token held that long is no limit", cfg.Hold, maxTTL)
	}
	if cfg.Hold < time.Millisecond || cfg.MaxBatch < 1 || cfg.MaxBatch > c || cfg.Share < 1 {
		return nil, invalidOption("WithLease(Lease{Hold: %v, MaxBatch: %d, Share: %d}): lease needs Hold >= 1ms, 1 <= MaxBatch <= capacity (%d) and Share >= 1 (0 for the defaults)",
			cfg.Hold, cfg.MaxBatch, cfg.Share, c)
	}
	mb := cfg.Hold / 4
	if r := e.limits[0].rate; r.Tokens() > 0 {
		fill := time.Duration(float64(r.Period()) * float64(c) / float64(r.Tokens()))
		mb = max(min(mb, fill/2), time.Millisecond)
	}
	return &leaser{e: e, hold: cfg.Hold, horizon: cfg.Hold.Seconds() / 4, max: cfg.MaxBatch, share: cfg.Share, maxBackoff: mb}, nil
}

// errClosed is returned by a leased Bucket used after Close.
var errClosed = errors.New("redisbucket: bucket closed")

// decide serves cost from leased tokens when it can, and otherwise asks
// Redis for a new lease that covers cost and, beyond it, the demand
// expected over the lease horizon.
func (l *leaser) decide(ctx context.Context, cost int64) (decision, error) {
	now := l.e.o.clock.Now()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return decision{}, errClosed
	}
	l.noteDemand(now, cost)
	if l.takeLocked(now, cost) {
		l.mu.Unlock()
		return decision{granted: true, mode: ModeLease}, nil
	}
	if now.Before(l.denyUntil) && cost >= l.denyCost {
		w := l.denyUntil.Sub(now)
		l.mu.Unlock()
		return decision{wait: w, mode: ModeLease}, nil
	}
	want := min(max(cost, int64(math.Ceil(l.rate*l.horizon))), l.max)
	l.mu.Unlock()

	l.fetch.Lock()
	defer l.fetch.Unlock()
	// Another goroutine may have fetched while this one waited, or been
	// refused: a refusal holds for every goroutine until its wait is over,
	// or each queued one would make a refused call of its own and double
	// the backoff.
	now = l.e.o.clock.Now()
	l.mu.Lock()
	if l.takeLocked(now, cost) {
		l.mu.Unlock()
		return decision{granted: true, mode: ModeLease}, nil
	}
	if now.Before(l.denyUntil) && cost >= l.denyCost {
		w := l.denyUntil.Sub(now)
		l.mu.Unlock()
		return decision{wait: w, mode: ModeLease}, nil
	}
	l.mu.Unlock()

	costs := []int64{cost}
	id := newPermitID()
	res, fail, cause, err := l.e.attempt(ctx, now, modeLease, id, costs, []int64{max(want, cost)}, l.share, l.hold+time.Minute)
	if err != nil {
		return decision{}, err
	}
	if !fail {
		d := l.e.fromResult(res, costs)
		l.mu.Lock()
		if d.granted {
			if res.amount > cost {
				l.addLocked(now, &batch{id: id, size: res.amount, left: res.amount - cost, expires: now.Add(l.hold)})
			}
			if res.wait > 0 {
				// A short lease: Redis is nearly empty, and other
				// processes take what accrues. Once this lease is used
				// up, refuse locally until a full one could be had
				// (backing off as for a refusal), instead of asking for
				// each token as it accrues.
				l.denyUntil, l.denyCost = now.Add(l.backoff(res.wait, false)), 1
			} else {
				l.refusals = 0
			}
			d.wait = 0
		} else if !d.never {
			// Refused: the tokens are not there, and other processes
			// compete for what accrues.
			d.wait = l.backoff(d.wait, true)
			l.denyUntil, l.denyCost = now.Add(d.wait), cost
		}
		l.mu.Unlock()
		return d, nil
	}
	return l.e.fallback(costs, cause, now), nil
}

// backoff returns how long to refuse locally after Redis refused, or
// granted a short lease, with wait until it could do better: the wait,
// doubled with each consecutive such answer and capped at maxBackoff (but
// never below the wait of a refusal), so that processes competing for a
// saturated limit spread their calls out instead of polling once per
// token.
func (l *leaser) backoff(wait time.Duration, refused bool) time.Duration {
	w := min(wait<<min(l.refusals, 20), l.maxBackoff)
	l.refusals++
	if refused {
		// Asking before the wait Redis returned is sure to fail.
		w = max(w, wait)
	}
	return w
}

// noteDemand updates the demand estimate: an exponentially weighted rate
// with a time constant of one horizon.
func (l *leaser) noteDemand(now time.Time, cost int64) {
	if !l.last.IsZero() {
		if dt := now.Sub(l.last).Seconds(); dt > 0 {
			l.rate *= math.Exp(-dt / l.horizon)
		}
	}
	if now.After(l.last) {
		l.last = now
	}
	l.rate += float64(cost) / l.horizon
}

// takeLocked spends cost from unexpired batches, oldest first, if they hold
// enough.
func (l *leaser) takeLocked(now time.Time, cost int64) bool {
	var have int64
	for _, b := range l.batches {
		if now.Before(b.expires) {
			have += b.left
		}
	}
	if have < cost {
		return false
	}
	kept := l.batches[:0]
	for _, b := range l.batches {
		if cost > 0 && now.Before(b.expires) {
			n := min(b.left, cost)
			b.left -= n
			cost -= n
		}
		if b.left > 0 {
			kept = append(kept, b) // a used-up batch has nothing to return
		}
	}
	clear(l.batches[len(kept):])
	l.batches = kept
	return true
}

// addLocked keeps a new batch and makes sure a timer returns it on expiry.
func (l *leaser) addLocked(now time.Time, b *batch) {
	l.batches = append(l.batches, b)
	if l.timer == nil || b.expires.Before(l.timerAt) {
		l.armLocked(now, b.expires)
	}
}

func (l *leaser) armLocked(now, at time.Time) {
	if l.timer != nil {
		l.timer.Stop()
	}
	l.timerAt = at
	// The callback knows its timer by generation, not by the Timer value:
	// a timer that fires at once would read that value before AfterFunc
	// has returned it.
	l.gen++
	gen := l.gen
	l.timer = l.e.o.clock.AfterFunc(max(at.Sub(now), time.Nanosecond), func() { l.expire(gen) })
}

// expire returns the expired batches' unused tokens to Redis and re-arms
// the timer for the next expiry.
func (l *leaser) expire(gen uint64) {
	now := l.e.o.clock.Now()
	l.mu.Lock()
	if l.gen != gen || l.timer == nil || l.closed {
		l.mu.Unlock()
		return
	}
	l.returning.Add(1)
	defer l.returning.Done()
	if l.returned != nil {
		defer l.returned()
	}
	l.timer = nil
	var done []*batch
	kept := l.batches[:0]
	for _, b := range l.batches {
		if now.Before(b.expires) {
			kept = append(kept, b)
		} else {
			done = append(done, b)
		}
	}
	l.batches = kept
	if len(kept) > 0 {
		l.armLocked(now, kept[0].expires)
	}
	l.mu.Unlock()
	l.giveBack(done)
}

// giveBack settles batches against what was used, which refunds the rest.
// The permit id makes a retried return harmless; a return that fails leaves
// the tokens spent, which errs on the safe side.
func (l *leaser) giveBack(bs []*batch) error {
	var errs []error
	for _, b := range bs {
		if b.left == 0 {
			continue
		}
		ctx := context.Background()
		_, err := l.e.call(ctx, modeSettle, b.id, []int64{b.size}, []int64{b.size - b.left}, 1, l.hold+time.Minute)
		if err != nil && unavailable(ctx, err) {
			_, err = l.e.call(ctx, modeSettle, b.id, []int64{b.size}, []int64{b.size - b.left}, 1, l.hold+time.Minute)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// close stops the timer and returns every batch.
func (l *leaser) close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
	}
	l.timer = nil
	bs := l.batches
	l.batches = nil
	l.mu.Unlock()
	l.returning.Wait()
	return l.giveBack(bs)
}
