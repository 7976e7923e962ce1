package throttle

import (
	"encoding/binary"
	"errors"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttlekit/throttle/internal/exact"
)

// The sweep's pace and grain. A shard's entries are split into chunks of
// dueChunk, each with a due instant: no entry of the chunk can be dropped
// before it. The shard keeps the earliest due of all (next), so a call
// finds in one comparison that nothing can be dropped, which is the usual
// case; once something may be, every call on the shard moves its sweep on
// by up to sweepBudget steps, a step being one entry looked at or one chunk
// passed over because it is not due. A chunk is due when the earliest of
// its keys may be droppable, from the bounds found when it was last looked
// at (a use only moves a key's instant later, so a bound stays a bound).
// Once d keys can be dropped they go within a pass or two, about
// (d + due keys)/sweepBudget + n/(sweepBudget*dueChunk) calls on the shard,
// n being the keys held: keys in steady use make their chunks due about
// once per refill time, and the rest of the work is what is dropped.
const (
	dueChunk    = 32
	sweepBudget = 4
	stepsInsert = sweepBudget
	// roomBudget is what a call that finds the Keyed at its WithMaxKeys
	// cap may sweep, of its own shard and others, to make room before the
	// key overflows.
	roomBudget = 4 * dueChunk
	// heldRecheck is the least time before a key with a Limiter that
	// could not be dropped is looked at again: whether its Limiters and
	// Permits are still reachable is known only after a garbage
	// collection.
	heldRecheck = int64(time.Millisecond)
)

// minRebuild is the smallest peak of a shard worth rebuilding for.
const minRebuild = 8

// shard is one lock's worth of keys. Entries live in a dense slice, which
// the sweep walks with a cursor and compacts by moving the last entry into a
// hole. The table finds a key's entry (see keyed_table.go).
type shard[K comparable] struct {
	mu     sync.Mutex
	table  []uint32 // open addressing: hash bits and entry position
	ents   entries[K]
	dues   []int64 // per chunk of dueChunk entries: no entry of it is droppable before
	cursor int     // next entry the sweep looks at
	peak   int     // most entries since the storage was last rebuilt
	// next is at or before every chunk's due: until then nothing can be
	// dropped. passMin collects the dues seen by the pass in progress, and
	// scanMin those of the chunk being looked at.
	next, passMin, scanMin int64
	seed                   maphash.Seed // the Keyed's
	profiles               map[string]*profile
	last                   *profile      // the profile used last, tried before the map
	count, room            *atomic.Int64 // the Keyed's count and room, with a key cap
	over                   []*overflowTable[K]
	// No padding: 192 bytes, so shards side by side do not share cache
	// lines (TestKeyedShardIsCacheLines).
}

// entry is one key. While the key has no Limiter, its state is its levels
// alone, on the Keyed's time line: lvl for the first limit and x.more for
// the others. A key that never paused, never queued and owes no permit
// needs nothing else.
type entry[K comparable] struct {
	key K
	x   *extra       // never nil; the profile's plain extra for one limit and no Limiter
	lvl exact.Packed // the first limit's level, unless the profile is wide
}

// newEntry returns the entry of a fresh key of p: full at now.
func newEntry[K comparable](key K, p *profile, now int64) entry[K] {
	if p.plain.p == nil {
		p.plain.p, p.wide = p, !p.shapes[0].Packs()
	}
	e := entry[K]{key: key, x: &p.plain}
	full := level{Tokens: p.shapes[0].Cap, Last: now}
	if n := len(p.shapes); n > 1 || p.wide {
		e.x = &extra{p: p}
		if n > 1 {
			e.x.more = make([]level, n-1)
			for j := range e.x.more {
				e.x.more[j] = level{Tokens: p.shapes[j+1].Cap, Last: now}
			}
		}
	}
	e.set(0, full)
	return e
}

// prof returns the key's profile.
func (e *entry[K]) prof() *profile { return e.x.p }

// plain reports whether the key has one limit and no Limiter.
func (e *entry[K]) plain() bool { return e.x == &e.x.p.plain }

func (e *entry[K]) held() *held { return e.x.h }

// get returns the compact level of limit i.
func (e *entry[K]) get(i int) level {
	switch p := e.x.p; {
	case i > 0:
		return e.x.more[i-1]
	case p.wide:
		return e.x.first
	default:
		return p.shapes[0].Unpack(e.lvl)
	}
}

// set stores l as the compact level of limit i.
func (e *entry[K]) set(i int, l level) {
	switch p := e.x.p; {
	case i > 0:
		e.x.more[i-1] = l
	case p.wide:
		e.x.first = l
	default:
		e.lvl = p.shapes[0].Pack(l)
	}
}

// readyAt is readyAt of acquire.go for a compact key: it has never paused
// and its queue has always been empty, so neither the pause nor the floor of
// served waiters can be later than now. It advances the levels to now.
func (e *entry[K]) readyAt(costs []int64, now int64) int64 {
	t := now
	shapes := e.prof().shapes
	for i := range shapes {
		s, l := &shapes[i], e.get(i)
		s.Advance(&l, now)
		e.set(i, l)
		if c := costs[i]; c != 0 {
			t = max(t, s.ReadyAt(&l, c))
		}
	}
	return t
}

// try is Limiter.TryAcquire on a compact key whose costs were checked.
func (e *entry[K]) try(costs []int64, now int64) bool {
	if e.readyAt(costs, now) > now {
		return false
	}
	for i, c := range costs {
		if c != 0 {
			l := e.get(i)
			l.Take(c)
			e.set(i, l)
		}
	}
	return true
}

// idle reports whether the key is exactly as a fresh one would be from now
// on, so that it can be dropped. Unless all is set, it also asks that the
// key was last used at least p.horizon ago: a key in steady use, though
// full at each look, is not dropped and made again between uses.
func (e *entry[K]) idle(now int64, all bool) bool {
	p := e.prof()
	if h := e.held(); h != nil {
		return h.idle(all, p.horizon)
	}
	// Every call on the key advances all its levels, so the first level's
	// last is the instant of the last call.
	if !all && now-e.get(0).Last < p.horizon {
		return false
	}
	for i := range p.shapes {
		s, l := &p.shapes[i], e.get(i)
		if s.ReadyAt(&l, s.Cap) > now {
			return false
		}
	}
	return true
}

// due returns the earliest instant at which the key may be dropped by the
// lazy sweep, at or before now if it may be dropped now: for a key with no
// Limiter, when it has gone unused for its horizon and every level is full
// (never, for a spent limit that does not refill). A key with a Limiter is
// looked at again after its horizon, or heldRecheck, whichever is longer.
func (e *entry[K]) due(now int64) int64 {
	p := e.prof()
	if h := e.held(); h != nil {
		if h.idle(false, p.horizon) {
			return now
		}
		return exact.AddSat(now, uint64(max(p.horizon, heldRecheck)))
	}
	t := exact.AddSat(e.get(0).Last, uint64(p.horizon))
	for i := range p.shapes {
		s, l := &p.shapes[i], e.get(i)
		t = max(t, s.ReadyAt(&l, s.Cap))
	}
	return t
}

// How find treats a key that is not held.
const (
	findMake  = iota // make it, after checking costs
	findPeek         // check costs as WaitTime does, but do not make it: a fresh key is full
	findForce        // make it, with no costs to check
)

// find returns key's entry and the time, read under the lock s.mu, which is
// held on entry and on return but released while config runs. tag is the
// key's hash bits for the table. For a key not held it does as mode says;
// when the Keyed is at its key cap and no room can be made, it returns
// instead the key's overflow bucket (for findPeek, that of a key that would
// overflow). A nil entry with a nil error means findPeek found the costs
// valid for a fresh key. steps is the sweep's due.
func (s *shard[K]) find(k *Keyed[K], key K, tag uint32, costs []int64, mode int) (e *entry[K], now int64, steps int, err error) {
	e, p, now, err := s.lookup(k, key, tag, mode != findPeek)
	switch {
	case err != nil:
		return nil, now, 0, err
	case e != nil:
		return e, now, s.due(), nil
	}
	switch mode {
	case findMake:
		// A closed limit is no mistake: the key is made, and refuses.
		if err := p.check(costs); err != nil && !errors.Is(err, errClosed) {
			s.forget(p)
			return nil, now, 0, err
		}
	case findPeek:
		if err := p.checkWait(costs); err != nil {
			return nil, now, 0, err
		}
		if !k.hasRoom(s, now) {
			e, err = s.overflow(k, p, tag, now)
		}
		return e, now, s.due(), err
	}
	if !k.reserve(s, now) {
		e, err = s.overflow(k, p, tag, now)
		s.forget(p)
		return e, now, s.due(), err
	}
	return s.insert(key, tag, p, now), now, stepsInsert, nil
}

// lookup returns key's entry, or, for a key not held, a nil entry and the
// profile its config gives, interned if keep is set; the caller then
// inserts the key or forgets the profile. The lock s.mu is held on entry
// and on return but released while config runs, and now is read under it.
func (s *shard[K]) lookup(k *Keyed[K], key K, tag uint32, keep bool) (e *entry[K], p *profile, now int64, err error) {
	now = k.now()
	if i := s.locate(key, tag); i >= 0 {
		return s.ents.at(i), nil, now, nil
	}
	s.mu.Unlock()
	limits := k.config(key)
	s.mu.Lock()
	now = k.now()
	if i := s.locate(key, tag); i >= 0 { // made by another call meanwhile
		return s.ents.at(i), nil, now, nil
	}
	p, err = s.intern(limits, keep)
	return nil, p, now, err
}

// due returns the sweep steps a call that adds no key may take.
func (s *shard[K]) due() int { return sweepBudget }

// intern returns the shard's profile for limits, making it if needed; it
// keeps a profile it made only when keep is set.
func (s *shard[K]) intern(limits []Limit, keep bool) (*profile, error) {
	if s.last != nil && slices.Equal(s.last.limits, limits) {
		return s.last, nil
	}
	var buf [96]byte
	sig := signature(buf[:0], limits)
	if p, ok := s.profiles[string(sig)]; ok {
		s.last = p
		return p, nil
	}
	p, err := newProfile(limits, string(sig))
	if err != nil || !keep {
		return p, err
	}
	if s.profiles == nil {
		s.profiles = make(map[string]*profile)
	}
	s.profiles[p.sig] = p
	s.last = p
	return p, nil
}

// forget removes p from the intern map if no entry uses it.
func (s *shard[K]) forget(p *profile) {
	if p.refs > 0 {
		return
	}
	delete(s.profiles, p.sig)
	if len(s.profiles) == 0 {
		s.profiles = nil
	}
	if s.last == p {
		s.last = nil
	}
}

// signature encodes limits unambiguously, as an intern map key.
func signature(buf []byte, limits []Limit) []byte {
	for _, l := range limits {
		buf = binary.AppendUvarint(buf, uint64(len(l.Name)))
		buf = append(buf, l.Name...)
		buf = binary.AppendVarint(buf, l.Capacity)
		buf = binary.AppendVarint(buf, l.Rate.tokens)
		buf = binary.AppendVarint(buf, int64(l.Rate.period))
	}
	return buf
}

// insert adds a full key and returns its entry.
func (s *shard[K]) insert(key K, tag uint32, p *profile, now int64) *entry[K] {
	p.refs++
	i := s.ents.push(newEntry(key, p, now))
	e := s.ents.at(i)
	s.place(tag, i)
	s.peak = max(s.peak, s.ents.n)
	if c := i / dueChunk; c == len(s.dues) {
		s.dues = append(s.dues, exact.Never)
	}
	s.noteDue(i, exact.AddSat(now, uint64(p.horizon))) // a fresh key is full
	return e
}

// noteDue records that the entry at position i may be droppable from t.
// Every bound it lowers stays a bound: a due too early only makes the sweep
// look again.
func (s *shard[K]) noteDue(i int, t int64) {
	c := i / dueChunk
	s.dues[c] = min(s.dues[c], t)
	if t < s.next {
		s.next = t
		if s.room != nil {
			lower(s.room, t)
		}
	}
	s.passMin = min(s.passMin, t)
	if c == s.cursor/dueChunk {
		s.scanMin = min(s.scanMin, t)
	}
}

// sweep moves the shard's sweep on by up to steps steps if anything may be
// droppable now, dropping what is. It must run after the caller is done with
// any *entry, since dropping moves entries.
func (s *shard[K]) sweep(now int64, steps int) {
	if now >= s.next && s.ents.n > 0 {
		s.sweepDue(now, steps)
	}
}

// sweepDue is sweep once something may be due. The cursor walks the
// entries; at the start of a chunk that is not due it passes over the whole
// chunk in one step, else it looks at the chunk's entries one a step and
// gives the chunk the earliest due it found. A pass that reaches the end
// sets next to the earliest due it saw.
func (s *shard[K]) sweepDue(now int64, steps int) (left int) {
	dropped := false
	for ; steps > 0; steps-- {
		if s.cursor >= s.ents.n {
			s.cursor = 0
			s.next, s.passMin = s.passMin, exact.Never
			if now < s.next || s.ents.n == 0 {
				break
			}
		}
		c := s.cursor / dueChunk
		if s.cursor%dueChunk == 0 {
			if d := s.dues[c]; d > now {
				s.passMin = min(s.passMin, d)
				s.cursor += dueChunk
				continue
			}
			s.scanMin = exact.Never
		}
		if d := s.ents.at(s.cursor).due(now); d <= now {
			s.drop(s.cursor) // the entry moved here is looked at next
			dropped = true
		} else {
			s.scanMin = min(s.scanMin, d)
			s.cursor++
		}
		if s.cursor%dueChunk == 0 || s.cursor >= s.ents.n {
			if c < len(s.dues) {
				s.dues[c] = s.scanMin
			}
			s.passMin = min(s.passMin, s.scanMin)
		}
	}
	if dropped {
		s.shrink()
	}
	return steps
}

// redue recomputes every chunk's due, after Sweep, and starts a new pass.
func (s *shard[K]) redue(now int64) {
	s.dues = s.dues[:0]
	s.next, s.passMin, s.scanMin, s.cursor = exact.Never, exact.Never, exact.Never, 0
	for j := range s.ents.n {
		if j%dueChunk == 0 {
			s.dues = append(s.dues, exact.Never)
		}
		s.noteDue(j, s.ents.at(j).due(now))
	}
	s.passMin = exact.Never
}

// drop removes entry i, moving the last entry into its place.
func (s *shard[K]) drop(i int) {
	e := s.ents.at(i)
	s.unplace(s.tag(e.key), i)
	p := e.prof()
	p.refs--
	s.forget(p)
	last := s.ents.n - 1
	if i != last {
		*e = *s.ents.at(last)
		s.repoint(s.tag(e.key), last, i)
		s.noteDue(i, s.dues[last/dueChunk]) // the moved entry's bound
	}
	s.ents.pop()
	if n := len(s.dues); (n-1)*dueChunk >= last {
		s.dues = s.dues[:n-1]
	}
	if s.count != nil {
		s.count.Add(-1)
	}
}

// tag returns the hash bits of key that the table keeps; the low bits of
// the same hash chose the shard.
func (s *shard[K]) tag(key K) uint32 {
	return uint32(maphash.Comparable(s.seed, key) >> 32)
}

// shrink gives memory back after mass eviction: the slice and the table are
// rebuilt at their current size once it falls below a quarter of the peak
// since the last rebuild, so the copy costs at most a third of the drops
// that led to it, O(1) amortised per call. An empty shard lets go of
// everything.
func (s *shard[K]) shrink() {
	n := s.ents.n
	if n == 0 {
		s.table, s.ents, s.profiles, s.last, s.dues = nil, entries[K]{}, nil, nil, nil
		s.peak, s.cursor = 0, 0
		s.next, s.passMin, s.scanMin = exact.Never, exact.Never, exact.Never
		return
	}
	if s.peak < minRebuild || n >= s.peak/4 {
		return
	}
	s.ents.compact()
	s.dues = slices.Clone(s.dues)
	s.resize(tableSize(n), -1)
	s.peak = n
	if s.cursor > n {
		s.cursor = 0
	}
}
