package throttle

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync/atomic"
	"time"
	"weak"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle/internal/exact"
	"github.com/throttlekit/throttle/internal/option"
)

// Limit configures one limit of a keyed limiter: a bucket named Name that
// holds at most Capacity tokens and refills at Rate, as New would make it.
type Limit struct {
	Name     string
	Capacity int64
	Rate     Rate
}

// numShards splits a Keyed so that calls on different keys rarely contend
// for one lock. A power of two, so the shard is a mask of the hash.
const numShards = 64

// Keyed is a set of limiters, one per key (an API key, a host, a model, a
// tenant), each made on the key's first use from the limits its config
// returns. The limits of one key form one Limiter: costs are given per limit
// in config order and taken from all of them or from none.
//
// A Keyed holds only the keys in use. A key whose buckets have refilled to
// capacity, with nobody waiting, no pause in force and no Permit or Limiter
// of the key still reachable, is in exactly the state a fresh key is in, so
// it can be dropped and made again from config on its next use with no
// change in any decision (given a clock that never runs backwards, as the
// real one does not). Keys are dropped lazily, with no goroutine, by a
// sweep that calls on the Keyed drive. The sweep drops a key that is in
// that state and has gone unused for as long as its limits take to refill
// from empty (the longest Capacity/Rate), so that a key in steady use is not
// made again between uses. Each shard knows the earliest instant at which any of its keys may
// become droppable, and for each run of 32 keys the same, so a call costs
// the sweep one comparison until then, and afterwards moves it on by up to
// four steps, a step being one key looked at or a run of 32 passed over.
// Bound: once N keys of a shard holding M others have become droppable,
// they are gone within (N+M)/2 calls on the shard (two passes of four steps
// a call), and within about N once the sweep has looked at the M keys
// since they were last used (TestKeyedSweepBound; benchmarks/README.md has
// the figures), so memory comes back in time proportional to what was
// added. The keys held are capped, at 524,288 unless WithMaxKeys
// says otherwise, so that keys made up by clients cannot take memory
// without bound. This is why
// config must return the same limits for a key every time it is called: a
// key may be made many times. Any change made through the key's Limiter
// (SetRate, SetCapacity) lasts only as long as the key is held; once
// dropped, the key starts again from config.
//
// A key that is merely spending tokens is a compact record of its levels:
// for one limit, its key, one pointer and 16 bytes of level (32 bytes with
// a uint64 key, 40 with a string one, plus the string's bytes), and 4 bytes
// of index kept between 64% and 80% full (benchmarks/README.md has the
// heap a key takes through Handler). A key gets a full Limiter
// (several hundred bytes) while it needs one: while someone waits in
// Acquire or holds a Permit from it, and after Limiter was called for it,
// until it is dropped. A key's Gate (Gate) decides on the compact record,
// as Handler and the gRPC interceptors over PerKey do, so a key that
// clients merely spend on stays compact. Permits and Limiters handed out are tracked with weak
// pointers, so a key whose Permit or Limiter its user let go of becomes
// droppable after the next garbage collection.
//
// A Keyed is safe for concurrent use. Its map is split into shards, each
// with its own lock, so calls on different keys rarely wait for each other.
type Keyed[K comparable] struct {
	config func(K) []Limit
	clock  clockwork.Clock // nil: the real clock, read like a group's
	obs    Observer
	epoch  time.Time // instant 0 of every key's time line
	seed   maphash.Seed
	max    int64        // the key cap; 0: none
	count  atomic.Int64 // keys held, kept only with a cap
	// room is, with a cap, at or before the earliest instant at which any
	// shard may have a key to drop (its next), and help the shard at which
	// a call at the cap looks for room outside its own.
	room, help atomic.Int64
	extras     extras // overflow and cost-view Limiters, by limit set
	shards     [numShards]shard[K]
}

// NewKeyed returns an empty keyed limiter whose key K gets the limits
// config(K) returns. WithClock and WithObserver apply to every key; the
// limits are named by their Limit.Name, so given WithName NewKeyed panics
// with an error that matches ErrInvalidOption: a mistake in the program,
// found on its first run, as NewKeyed returns no error.
//
// config is called without any lock held, on a key's first use and again
// whenever the key is made afresh after being dropped, so it must be
// deterministic and should be cheap. When it returns no limits or an invalid
// one, every call on that key fails with an error that matches
// ErrInvalidOption and wraps the error New returns for that limit, and the
// key takes no memory; a nil config is one that returns no limits.
func NewKeyed[K comparable](config func(K) []Limit, opts ...Option) *Keyed[K] {
	if config == nil {
		// No config is a config of no limits: every call fails with
		// ErrInvalidOption, never with a nil call.
		config = func(K) []Limit { return nil }
	}
	o, err := option.Apply("NewKeyed", option.Clock|option.Observer|option.MaxKeys, map[option.Set]string{
		option.Name: ": a key's limits are named by their Limit.Name",
	}, opts)
	if err != nil {
		panic(err)
	}
	k := &Keyed[K]{config: config, clock: o.Clock, obs: o.Observer, seed: maphash.MakeSeed(), max: defaultMaxKeys}
	if o.MaxKeys != 0 {
		k.max = max(int64(o.MaxKeys), 0)
	}
	k.room.Store(exact.Never)
	for i := range k.shards {
		s := &k.shards[i]
		s.seed = k.seed
		s.next, s.passMin, s.scanMin = exact.Never, exact.Never, exact.Never
		if k.max > 0 {
			s.count, s.room = &k.count, &k.room
		}
	}
	if o.Clock == nil {
		k.epoch = time.Now()
	} else {
		k.epoch = o.Clock.Now()
	}
	return k
}

// now reads the clock exactly as a group does, on the keyed time line.
func (k *Keyed[K]) now() int64 {
	if k.clock == nil {
		return int64(time.Since(k.epoch))
	}
	return int64(k.clock.Since(k.epoch))
}

// shard returns key's shard, and the bits of the key's hash that its table
// keeps.
func (k *Keyed[K]) shard(key K) (*shard[K], uint32) {
	h := maphash.Comparable(k.seed, key)
	return &k.shards[h&(numShards-1)], uint32(h >> 32)
}

// TryAcquire takes costs[i] from limit i of key's limiter if every limit
// covers its cost now and nobody is queued for the key; otherwise it takes
// nothing. It never blocks. A zero cost leaves that limit out; at least one
// cost must be positive. It is Limiter.TryAcquire on the key's limiter.
func (k *Keyed[K]) TryAcquire(key K, costs ...int64) (bool, error) {
	ok, _, err := k.try(key, costs, false)
	return ok, err
}

// try is TryAcquire. With quiet set it leaves a key that has a Limiter
// alone (held true: the caller acts on that Limiter) and tells the
// observer nothing of a refusal, for a caller that waits next (Take).
func (k *Keyed[K]) try(key K, costs []int64, quiet bool) (ok, held bool, err error) {
	s, tag := k.shard(key)
	s.mu.Lock()
	e, now, steps, err := s.find(k, key, tag, costs, findMake)
	if err != nil {
		s.mu.Unlock()
		return false, false, err
	}
	if h := e.held(); h != nil {
		if quiet {
			s.sweep(now, steps)
			s.mu.Unlock()
			return false, true, nil
		}
		h.inflight.Add(1)
		s.sweep(now, steps)
		s.mu.Unlock()
		defer h.inflight.Add(-1)
		ok, err := h.lim.TryAcquire(costs...)
		return ok, false, err
	}
	p := e.prof()
	if c := costs; e.plain() && len(c) == 1 && c[0] > 0 && c[0] <= p.shapes[0].Cap {
		// One limit, compact, a valid cost: e.try, unrolled.
		sh := &p.shapes[0]
		l := sh.Unpack(e.lvl)
		sh.Advance(&l, now)
		if ok = l.Tokens >= c[0] && l.Last <= now; ok {
			l.Take(c[0])
		}
		e.lvl = sh.Pack(l)
	} else {
		if err := p.check(costs); err != nil {
			s.mu.Unlock()
			if errors.Is(err, errClosed) { // refused, not a mistake
				if k.obs != nil && !quiet {
					p.observeWait(k.obs, costs, EventRejected, nil)
				}
				return false, false, nil
			}
			return false, false, err
		}
		ok = e.try(costs, now)
	}
	tell := k.obs != nil && (ok || !quiet)
	var why *WaitError
	if !ok && tell {
		why = e.rejectedWhy(costs, now)
	}
	s.sweep(now, steps)
	s.mu.Unlock()
	if tell {
		kind := EventRejected
		if ok {
			kind = EventGranted
		}
		p.observeWait(k.obs, costs, kind, why)
	}
	return ok, false, nil
}

// WaitTime reports how long until TryAcquire(key, costs...) would succeed,
// given the waiters already queued for the key and no other change: 0 if it
// would succeed now. It is Limiter.WaitTime on the key's limiter; asking
// about a key that is not held does not make it.
func (k *Keyed[K]) WaitTime(key K, costs ...int64) (time.Duration, error) {
	s, tag := k.shard(key)
	s.mu.Lock()
	e, now, steps, err := s.find(k, key, tag, costs, findPeek)
	if err != nil {
		s.mu.Unlock()
		return 0, err
	}
	if e == nil {
		// A fresh key is full, and the costs were valid: no wait.
		s.sweep(now, steps)
		s.mu.Unlock()
		return 0, nil
	}
	if h := e.held(); h != nil {
		h.inflight.Add(1)
		s.sweep(now, steps)
		s.mu.Unlock()
		defer h.inflight.Add(-1)
		return h.lim.WaitTime(costs...)
	}
	p := e.prof()
	if err := p.checkWait(costs); err != nil {
		s.mu.Unlock()
		return 0, err
	}
	t := e.readyAt(costs, now)
	s.sweep(now, steps)
	s.mu.Unlock()
	if t == exact.Never {
		if err := p.noRefill(costs); err != nil {
			return 0, err
		}
	}
	return time.Duration(t - now), nil
}

// Acquire waits until every limit of key's limiter covers its cost at the
// same instant, then takes the costs and returns a Permit to settle them
// against the actual use. It is Limiter.Acquire on the key's limiter, with
// its guarantees: waiters for one key are served in FIFO order, a deadline
// too short fails at once, and a cancelled waiter spends nothing. The key is
// held, with a full Limiter, while the Permit is reachable.
func (k *Keyed[K]) Acquire(ctx context.Context, key K, costs ...int64) (Permit, error) {
	s, tag := k.shard(key)
	s.mu.Lock()
	e, p, now, err := s.lookup(k, key, tag, true)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if e == nil || e.held() == nil {
		if e != nil {
			p = e.prof()
		}
		// A call that can only fail must neither make the key nor give it
		// a Limiter. It fails as Limiter.Acquire would: a done ctx first,
		// then invalid costs.
		fail := func(err error) (Permit, error) {
			steps := s.due()
			if e == nil {
				s.forget(p)
			}
			s.sweep(now, steps)
			s.mu.Unlock()
			return nil, err
		}
		select {
		case <-ctx.Done():
			if k.obs != nil && len(costs) == len(p.shapes) {
				defer p.observe(k.obs, costs, EventCancelled)
			}
			return fail(ctx.Err())
		default:
		}
		if err := p.check(costs); err != nil {
			return fail(err)
		}
	}
	steps := stepsInsert
	if e == nil {
		if k.reserve(s, now) {
			e = s.insert(key, tag, p, now)
		} else {
			e, err = s.overflow(k, p, tag, now)
			s.forget(p)
			if steps = s.due(); err != nil {
				s.sweep(now, steps)
				s.mu.Unlock()
				return nil, err
			}
		}
	} else {
		steps = s.due()
	}
	// l shares the bucket array that the key's held record watches, and so
	// do the waiter and the Permit that l.Acquire makes: the key cannot be
	// dropped while any of them is reachable.
	l := limiterOver(k.materialise(e).shared())
	s.sweep(now, steps)
	s.mu.Unlock()
	return l.Acquire(ctx, costs...)
}

// Limiter returns the Limiter of key, making the key if it is not held, to
// act on the key as a whole or on one of its limits: PauseUntil pauses the
// key (as a Transport does when a server refuses it), Lower and Settle act
// on its levels, and Bucket(name) reaches a limit's Bucket for SetRate,
// SetCapacity or Status. Its TryAcquire, WaitTime and Acquire are those
// of the Keyed for this key. Limiter returns nil, and makes no key, when
// config returns no limits or an invalid one for key: the other methods
// then fail with an error matching ErrInvalidOption. For a key that
// overflows the WithMaxKeys cap it returns the shared overflow Limiter.
//
// The key is held, with every change made through the Limiter, at least as
// long as the Limiter is reachable; every Limiter returned for the key
// meanwhile has the same buckets. Keep the Limiter, not only Buckets
// taken from it: a key whose Limiters and Permits are all unreachable may be
// dropped once it is idle and full, and a Bucket kept alone is then no
// longer the key's.
func (k *Keyed[K]) Limiter(key K) *Limiter {
	l, _ := k.limiter(key)
	return l
}

// limiter is Limiter, with the error that config's limits for key gave.
func (k *Keyed[K]) limiter(key K) (*Limiter, error) {
	s, tag := k.shard(key)
	s.mu.Lock()
	e, now, steps, err := s.find(k, key, tag, nil, findForce)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	l := k.materialise(e).limiter()
	s.sweep(now, steps)
	s.mu.Unlock()
	return l, nil
}

// Len returns the number of keys held now: those used recently and not yet
// dropped. With WithMaxKeys it is never above the cap.
func (k *Keyed[K]) Len() int {
	if k.max > 0 {
		// The count, kept with every insertion and drop, is one instant's;
		// a sum over the shards, each read at its own, is not.
		return int(k.count.Load())
	}
	n := 0
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		n += s.ents.n
		s.mu.Unlock()
	}
	return n
}

// sweepAll drops at once every key that could be dropped now, whatever was
// used recently, and shrinks the shards' storage to fit; it returns the
// number of keys dropped. Calls drop keys lazily in any case, so this is
// for tests that count what the lazy sweep leaves.
func (k *Keyed[K]) sweepAll() int {
	n := 0
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		now := k.now()
		for j := 0; j < s.ents.n; {
			if s.ents.at(j).idle(now, true) {
				s.drop(j)
				n++
			} else {
				j++
			}
		}
		s.shrink()
		s.redue(now)
		s.mu.Unlock()
	}
	return n
}

// profile is the validated config of a set of keys: equal configs share one
// profile per shard, so a key costs a pointer, not a copy of its limits.
type profile struct {
	limits []Limit
	handed []Limit // a copy of limits for Gate.Limits, which its callers may spoil
	shapes []shape
	sig    string // key in the shard's intern map
	refs   int    // entries using it; guarded by the shard's lock
	// horizon is the longest time any limit takes to refill from empty,
	// in nanoseconds: how long a key must go unused to be dropped lazily.
	horizon int64
	plain   extra // the extra of this profile's keys of one limit with no Limiter
	wide    bool  // the first level does not pack (see exact.Packed); set with plain.p
}

func newProfile(limits []Limit, sig string) (*profile, error) {
	if len(limits) == 0 {
		return nil, fmt.Errorf("%w: config returned no limits", ErrInvalidOption)
	}
	p := &profile{limits: slices.Clone(limits), handed: slices.Clone(limits), shapes: make([]shape, len(limits)), sig: sig}
	for i, l := range limits {
		s, err := l.Rate.shape(l.Capacity)
		if err != nil {
			return nil, fmt.Errorf("%w: limit %q: %w", ErrInvalidOption, l.Name, err)
		}
		p.shapes[i] = s
		p.horizon = max(p.horizon, s.RefillTime())
	}
	return p, nil
}

// bucket is a stand-in for limit i, for the error helpers shared with
// Bucket, so that a key's errors read the same held or not.
func (p *profile) bucket(i int) *Bucket {
	return &Bucket{name: p.limits[i].Name, shape: p.shapes[i]}
}

// check is the check of Limiter.TryAcquire, against the configured limits.
func (p *profile) check(costs []int64) error {
	if len(costs) != len(p.shapes) {
		return costCount(len(costs), len(p.shapes))
	}
	any := false
	for i, c := range costs {
		if c < 0 {
			return limitErr(p.bucket(i), ErrInvalidCost, c)
		}
		if err := over(&p.shapes[i], c); err != nil {
			return limitErr(p.bucket(i), err, c)
		}
		any = any || c > 0
	}
	if !any {
		return errNoPositiveCost
	}
	return nil
}

// checkWait is the check of Limiter.WaitTime, which turns away a single
// cost that is not positive before naming any limit.
func (p *profile) checkWait(costs []int64) error {
	if len(p.shapes) == 1 && len(costs) == 1 && costs[0] <= 0 {
		return errNotPositive
	}
	return p.check(costs)
}

// noRefill is noRefill of acquire.go for a key that is not held.
func (p *profile) noRefill(costs []int64) error {
	for i, s := range p.shapes {
		if costs[i] > 0 && s.Num == 0 {
			return limitErr(p.bucket(i), errNoRefill, costs[i])
		}
	}
	return nil
}

func (p *profile) observe(o Observer, costs []int64, k EventKind) {
	for i, c := range costs {
		if c != 0 {
			o.Observe(Event{Kind: k, Limit: p.limits[i].Name, Cost: c})
		}
	}
}

// extra is what a key has beyond its first compact level: its limits, and
// the levels of its other limits or, once it has one, its Limiter. The keys
// of one limit that have no Limiter all point to their profile's plain
// extra, so that a key's record is its key, one pointer and one level.
type extra struct {
	p     *profile
	first level // the first level, for a profile too wide to pack it
	more  []level
	h     *held
}

// held is a key that has a real Limiter. The Limiter's buckets are then the
// key's state, until the key is dropped.
type held struct {
	lim *Limiter // the key's buckets, with a bucket array of its own
	// arr watches the bucket array shared by the Limiters handed out for
	// the key, their waiters and their Permits: while it is reachable
	// someone may still act on the buckets.
	arr weakBuckets
	// view is the last Limiter handed out for the key, over the shared
	// array: while anyone holds it, Limiter hands it out again, so that a
	// caller that keeps what it found for a Gate (the HTTP Transport) finds
	// the same Gate for the same key.
	view     weak.Pointer[Limiter]
	inflight atomic.Int32 // TryAcquire/WaitTime calls on lim, begun under the shard lock
}
