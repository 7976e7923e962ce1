package throttle

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle/internal/exact"
	"github.com/throttlekit/throttle/internal/option"
	"github.com/throttlekit/throttle/internal/queue"
)

// noPause is the pause instant of a bucket that was never paused.
const noPause = math.MinInt64

// Bucket is a token bucket of fixed capacity that refills continuously at
// a Rate. It starts full. The level never exceeds capacity; it may go below
// zero only through Permit.Settle (at most one capacity below), and that
// debt is repaid by refill before anything else is granted.
//
// A Bucket does the simple jobs: Acquire, TryAcquire, WaitTime, live
// changes, a pause, and Status. Everything that takes several costs at once
// or keeps a record of them (permits to settle, reservations, refunds, a
// server's count of what is left) is on the Limiter, and NewLimiter(b)
// makes one over a single bucket, which keeps working on its own.
//
// A Bucket is safe for concurrent use.
type Bucket struct {
	g    atomic.Pointer[group]
	name string
	obs  Observer
	rate Rate       // as given, for Status
	self [1]*Bucket // the bucket as a set of one, for its permits

	// Guarded by the group's mutex.
	shape
	lvl    level
	paused int64 // nothing is granted before this instant
	tail   level // the level after every queued waiter is served
	cause  pauseCause
}

// Option configures a Bucket.
type Option func(*options)

// options is what Options set; htb and trtcm apply the same ones.
type options = option.Options[Observer]

// WithClock makes the bucket read time from c and sleep on c's timers.
// The default is the real clock, read directly as a monotonic offset. A
// nil c is refused with ErrInvalidOption: leave the option out for the
// real clock.
func WithClock(c clockwork.Clock) Option {
	return func(o *options) {
		if c == nil {
			o.Refuse("WithClock(nil): leave WithClock out for the real clock")
		}
		o.Clock = c
		o.Given(option.Clock)
	}
}

// WithName names the bucket; errors and observer events carry the name.
func WithName(name string) Option {
	return func(o *options) {
		o.Name = name
		o.Given(option.Name)
	}
}

// New returns a full bucket that holds at most capacity tokens and refills
// at rate. A capacity of 0 makes a closed bucket, which admits nothing
// (TryAcquire refuses, Acquire and WaitTime fail with an error matching
// ErrCostExceedsCapacity), and the rate Inf one that never limits; both are
// for configs and tests that switch a limit off or shut it, behind the same
// types. New fails for a negative capacity, a negative token count or a
// period <= 0.
//
// A capacity of 1 paces: it spaces calls evenly at rate instead of letting
// them through in bursts, for a fragile downstream that a burst harms even
// when the average is within its quota. For calls of cost 1, the first
// passes at once; after that no two grants are closer than rate's interval,
// Period/Tokens, rounded up to the nanosecond; while callers are queued,
// each grant comes exactly that rounded interval after the one before (with
// Per(3, time.Second), 333 333 334 ns apart, because a full bucket keeps no
// fraction of a token beyond its capacity of 1). Over any stretch of time
// d, at most 1 + d*Tokens/Period calls pass. The price is latency: the k-th
// call of a burst waits (k-1)*Period/Tokens.
func New(capacity int64, rate Rate, opts ...Option) (*Bucket, error) {
	return newBucket("New", capacity, rate, opts)
}

// newBucket is New for the constructor ctor, named in errors.
func newBucket(ctor string, capacity int64, rate Rate, opts []Option) (*Bucket, error) {
	s, err := rate.shape(capacity)
	if err != nil {
		return nil, err
	}
	o, err := option.Apply(ctor, option.Clock|option.Name|option.Observer, bucketWhy, opts)
	if err != nil {
		return nil, err
	}
	return bucketOf(capacity, rate, s, o), nil
}

// bucketOf makes the bucket of shape s, with options o already checked: a
// nil clock there is the real one.
func bucketOf(capacity int64, rate Rate, s shape, o options) *Bucket {
	b := &Bucket{name: o.Name, obs: o.Observer, rate: rate, shape: s, paused: noPause}
	b.self[0] = b
	g := newGroup(o.Clock)
	b.lvl = level{Tokens: capacity, Last: g.Now()}
	g.members = []*Bucket{b}
	b.g.Store(g)
	return b
}

// bucketWhy says why New takes no WithMaxKeys.
var bucketWhy = map[option.Set]string{option.MaxKeys: option.KeyedOnly}

// TryAcquire spends cost tokens if the bucket holds them now and nobody is
// queued in Acquire; it never blocks and never jumps the queue. A rejected
// request spends nothing.
func (b *Bucket) TryAcquire(cost int64) (bool, error) {
	if cost <= 0 {
		return false, errNotPositive
	}
	// A free lock is the common case, kept inline; with the real clock the
	// clock is read inline too, which saves the calls to lockNow and
	// group.now (BenchmarkObserverTryAcquire measures the path).
	g := b.grp()
	var now int64
	if g.Mu.TryLock() {
		if g.Clock == nil {
			now = int64(time.Since(g.Epoch))
		} else {
			now = g.Now()
		}
		if b.g.Load() != g { // joined into a Limiter meanwhile
			g.Mu.Unlock()
			g, now = b.lockNow()
		}
	} else {
		g, now = b.lockNow()
	}
	if err := over(&b.shape, cost); err != nil {
		g.Mu.Unlock()
		if err == errClosed {
			if b.obs != nil {
				b.reportTry(false, cost, nil)
			}
			return false, nil
		}
		return false, limitErr(b, err, cost)
	}
	if g.Head != nil {
		g.serve(now)
	}
	ok := g.Head == nil && now >= b.paused
	if ok {
		b.Advance(&b.lvl, now)
		ok = b.lvl.Tokens >= cost || b.Inf
		if ok {
			b.lvl.Take(cost)
		}
	}
	var why *WaitError
	if !ok && b.obs != nil {
		why = b.rejectedWhy(g, cost, now)
	}
	g.Mu.Unlock()
	if b.obs != nil {
		b.reportTry(ok, cost, why)
	}
	return ok, nil
}

// rejectedWhy is group.rejectedWhy for one cost, apart for the same
// reason as reportTry.
//
//go:noinline
func (b *Bucket) rejectedWhy(g *group, cost int64, now int64) *WaitError {
	bs, costs := [1]*Bucket{b}, [1]int64{cost}
	return g.rejectedWhy(bs[:], costs[:], now)
}

// reportTry tells the observer how TryAcquire went. It is apart so that
// TryAcquire's frame stays small when nobody observes.
//
//go:noinline
func (b *Bucket) reportTry(ok bool, cost int64, why *WaitError) {
	if ok {
		b.obs.Observe(Event{Kind: EventGranted, Limit: b.name, Cost: cost})
	} else {
		var wait time.Duration
		if why != nil {
			wait = why.Wait
		}
		b.obs.Observe(Event{Kind: EventRejected, Limit: b.name, Cost: cost, Wait: wait, Why: why})
	}
}

// WaitTime reports how long until TryAcquire(cost) would succeed, given the
// waiters already queued and no other change: 0 if it would succeed now. The
// duration is rounded up to the nanosecond, so that waiting exactly that long
// succeeds and one nanosecond less does not. It fails with errNoRefill when
// the rate is zero and the level will never cover cost.
func (b *Bucket) WaitTime(cost int64) (time.Duration, error) {
	bs, costs := [1]*Bucket{b}, [1]int64{cost}
	return waitTime(bs[:], costs[:])
}

// lockNow locks the bucket's group and reads its clock, for TryAcquire
// when the lock was held (or the bucket moved to another group). The clock
// is read while waiting for the lock instead of spinning, which shortens
// the critical section for everyone. That reading can be older than the
// level's last instant once the lock is ours; it then counts as a clock
// that went back: no time passes, so it can refuse at the boundary but
// never grants what the level does not hold.
func (b *Bucket) lockNow() (*group, int64) {
	g := b.grp()
	now := g.Now()
	if h := b.lock(); h != g {
		return h, h.Now() // joined into a Limiter meanwhile: another time line
	}
	return g, now
}

// grp returns the bucket's group. The zero Bucket has none until it is
// first used, and then becomes a closed bucket (capacity 0, no refill):
// it admits nothing, as the zero x/time/rate Limiter rejects every event,
// and never dereferences a nil group.
func (b *Bucket) grp() *group {
	if g := b.g.Load(); g != nil {
		return g
	}
	return b.initZero()
}

// initZero makes the zero Bucket a closed one, once; the fields are set
// under the new group's lock, which every later use of them takes.
func (b *Bucket) initZero() *group {
	g := newGroup(nil)
	g.Mu.Lock()
	defer g.Mu.Unlock()
	if !b.g.CompareAndSwap(nil, g) {
		return b.g.Load()
	}
	b.self[0] = b
	b.shape = shape{Den: 1, PerDen: exact.NewDivider(1)}
	b.paused = noPause
	b.lvl = level{Last: g.Now()}
	g.members = []*Bucket{b}
	return g
}

// lock locks the bucket's group and returns it. The group can change when
// buckets are joined into a Limiter, hence the check after locking.
func (b *Bucket) lock() *group {
	b.grp() // the zero Bucket's group, made on first use
	return queue.Lock(&b.g)
}
