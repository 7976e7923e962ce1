package throttle

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/throttlekit/throttle/internal/exact"
	"github.com/throttlekit/throttle/internal/option"
)

// ErrTooManyKeys is returned by the calls on a key that finds a Keyed at its
// key cap when the keys that overflow already use maxOverflowSets distinct
// sets of limits, each with its overflow buckets.
var ErrTooManyKeys = errors.New("throttle: keyed limiter full")

// maxOverflowSets bounds the overflow tables of a Keyed: one per distinct
// set of limits that config returns for keys that overflow. A config gives
// most keys one of a few sets (tiers, say), so the bound is only met by a
// config that makes limits up per key.
const maxOverflowSets = 64

// defaultMaxKeys is the key cap of a Keyed made without WithMaxKeys (see
// there; benchmarks/README.md has the memory it bounds).
const defaultMaxKeys = 1 << 19

// WithMaxKeys caps a Keyed at n keys held at once, so that its memory is
// bounded whatever keys its callers send: keys made up by clients, say,
// through PerKey. Without it a Keyed is capped at 524,288 keys (2^19),
// under 64 MB for keys of one limit; n <= 0 lifts the cap, for keys that
// never come from outside.
//
// A key is held from its first use until the lazy sweep drops it, once it
// has been full and unused for its refill time, exactly as without a cap:
// the cap never drops a key early, so the decisions of every key held are
// its own, whatever the traffic on other keys. A key that is not held when
// the Keyed is at its cap (and the sweep of its shard finds nothing to drop
// at once) overflows: while the Keyed stays full, its calls are decided on
// one of a fixed table of overflow buckets of its limits, 65,536 for the
// first set of limits to overflow (half as many for each later set, down to
// 1,024), the bucket picked by the key's hash with the Keyed's random seed.
// Each bucket is a key's worth of those limits, starting full and never
// dropped. So an attack of new keys throttles new keys only, and those
// only as much as it loads their buckets: the keys held go on as before,
// and a new client shares its bucket with the attack keys that hash to it,
// which the attacker cannot choose. Precisely: if attack keys arrive at A
// new keys a second, spread over the B buckets by the hash, a bucket is
// charged about A/B requests a second by the attack; a client whose own
// rate plus A/B stays within the limit's rate, and whose burst plus what
// the attack charged within one refill time stays within its capacity, is
// admitted as if alone. (With 100 a minute, 100k new keys a second over
// 65,536 buckets charge each about 1.5 a second, 92 a minute: a new client
// gets the 8 a minute to spare at length, and up to a full bucket at once.)
// A key that overflows gets its own record, starting full, on its first
// call that finds room. Keyed.Limiter of an overflowing key returns its
// bucket's Limiter, which it shares with the keys of that bucket: a pause
// or SetRate on it applies to all of them.
//
// Len never exceeds n.
// The overflow tables, one per distinct set of limits that config returns
// for overflowing keys (at most 64), are kept for the life of the Keyed:
// for one limit, 2 MB for the first set with uint64 keys (2.6 MB with
// string keys), 7.5 MB for all 64; a key whose limits would need a 65th
// fails with ErrTooManyKeys.
//
// WithMaxKeys applies to NewKeyed only; other constructors fail with
// ErrInvalidOption.
func WithMaxKeys(n int) Option {
	return func(o *options) {
		if n <= 0 {
			n = -1 // set, to no cap
		}
		o.MaxKeys = n
		o.Given(option.MaxKeys)
	}
}

// reserve counts a key about to be inserted in s, if the cap allows. At the
// cap it sweeps s for room and, if there is none and some shard may have a
// key to drop, the other shards, within roomBudget steps in all. Called
// with s locked, before any *entry is taken.
func (k *Keyed[K]) reserve(s *shard[K], now int64) bool {
	if s.ents.n >= maxShardKeys {
		return false
	}
	if k.max == 0 {
		return true
	}
	for try := 0; ; try++ {
		// Counted by compare-and-swap, not add-and-undo, so that the count
		// never reads above the cap, even for an instant.
		for c := k.count.Load(); c < k.max; c = k.count.Load() {
			if k.count.CompareAndSwap(c, c+1) {
				return true
			}
		}
		if try == 1 || !k.makeRoom(s, now) {
			return false
		}
	}
}

// hasRoom reports whether a key could be inserted in s now, as reserve
// would, without counting it.
func (k *Keyed[K]) hasRoom(s *shard[K], now int64) bool {
	if s.ents.n >= maxShardKeys {
		return false
	}
	if k.max == 0 || k.count.Load() < k.max {
		return true
	}
	return k.makeRoom(s, now) && k.count.Load() < k.max
}

// makeRoom sweeps for keys to drop, s first (which is locked), then other
// shards in turn from k.help, taking their locks only if free, so that
// shards are never waited for in two orders. It reports whether it swept
// anything. A round of every shard that finds none due raises k.room to
// the earliest next it saw, so that calls at the cap look again only from
// then on: until then, the Keyed full of keys that are all in use, they
// overflow at the cost of one comparison.
func (k *Keyed[K]) makeRoom(s *shard[K], now int64) bool {
	budget := roomBudget
	if now >= s.next && s.ents.n > 0 {
		budget = s.sweepDue(now, budget)
		if k.count.Load() < k.max {
			return true
		}
	}
	room := k.room.Load()
	if now < room {
		return budget < roomBudget
	}
	earliest, whole := int64(exact.Never), true
	for range numShards {
		if budget <= 0 {
			whole = false
			break
		}
		o := &k.shards[uint64(k.help.Add(1))%numShards]
		budget--
		if o == s {
			earliest = min(earliest, s.next)
			continue
		}
		if !o.mu.TryLock() {
			whole = false
			continue
		}
		if now >= o.next && o.ents.n > 0 {
			budget = o.sweepDue(now, budget)
		}
		earliest = min(earliest, o.next)
		o.mu.Unlock()
		if k.count.Load() < k.max {
			return true
		}
	}
	if whole && earliest > now {
		k.room.CompareAndSwap(room, earliest)
	}
	return true
}

// lower lowers a to t if t is earlier.
func lower(a *atomic.Int64, t int64) {
	for {
		cur := a.Load()
		if t >= cur || a.CompareAndSwap(cur, t) {
			return
		}
	}
}

// extras are what a Keyed keeps per set of limits rather than per key:
// the index of the set's overflow buckets under WithMaxKeys.
type extras struct {
	mu   sync.Mutex
	sets map[string]*extraSet // by profile signature
}

type extraSet struct {
	index int // how many sets came before
}

// set returns the extras of p's limits, made if there is room for them.
// Called with p's shard locked, which orders before extras.mu.
func (x *extras) set(p *profile) (*extraSet, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if es, ok := x.sets[p.sig]; ok {
		return es, nil
	}
	if len(x.sets) >= maxOverflowSets {
		return nil, fmt.Errorf("%w: %d sets of limits already overflow", ErrTooManyKeys, len(x.sets))
	}
	if x.sets == nil {
		x.sets = make(map[string]*extraSet)
	}
	es := &extraSet{index: len(x.sets)}
	x.sets[p.sig] = es
	return es, nil
}

// overflowSlots is the number of overflow buckets of the first set of
// limits to overflow, over all shards; each later set gets half as many as
// the one before, down to minOverflowSlots, so that 64 sets hold at most
// about three times the first's.
const (
	overflowSlots    = 1 << 16
	minOverflowSlots = 1 << 10
)

// overflowTable is a shard's overflow buckets of one set of limits: keys
// that find the Keyed at its cap are decided on the bucket their hash
// picks, a compact entry like a key's, which starts full and is never
// dropped.
type overflowTable[K comparable] struct {
	sig  string
	ents []entry[K]
}

// overflow returns the overflow bucket of the key with tag, of limits p,
// made with the shard's table of them if need be. Called with s locked.
func (s *shard[K]) overflow(k *Keyed[K], p *profile, tag uint32, now int64) (*entry[K], error) {
	var t *overflowTable[K]
	for _, o := range s.over {
		if o.sig == p.sig {
			t = o
			break
		}
	}
	if t == nil {
		es, err := k.extras.set(p)
		if err != nil {
			return nil, err
		}
		n := max(overflowSlots>>min(es.index, 16), minOverflowSlots) / numShards
		t = &overflowTable[K]{sig: p.sig, ents: make([]entry[K], n)}
		p.refs++ // the table's entries use p for the life of the Keyed
		for i := range t.ents {
			e := &t.ents[i]
			*e = newEntry(*new(K), p, now)
		}
		s.over = append(s.over, t)
	}
	e := &t.ents[(tag>>16)%uint32(len(t.ents))]
	if h := e.held(); h != nil && h.idle(true, 0) {
		// A bucket given a Limiter (Acquire, Limiter, RequestPermit on a
		// key that overflowed) that is now exactly a fresh one goes back
		// to its compact form, as a key would be dropped: otherwise an
		// attack on a handler that settles permits would leave every
		// bucket with a Limiter for good.
		*e = newEntry(*new(K), e.prof(), now)
	}
	return e, nil
}
