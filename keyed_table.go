package throttle

// A shard's table maps keys to positions in its entries, by open addressing
// with linear probing. A slot is 4 bytes: the low 8 bits of the key's tag
// (32 bits of its hash, from the high half of the hash that chose the
// shard) in the top 8 and the position plus one in the low 24; 0 is an
// empty slot. A key's probe starts at its home, the tag scaled to the
// table's size (its high bits, so unrelated to the 8 kept), and compares
// keys only when the stored bits match (a false match costs one key
// comparison in 256). Growing and deleting, which need the home of slots
// already placed, hash their keys again: both are rare next to lookups. The
// table grows by a quarter once four fifths full, so it is kept between
// 64% and 80% full: a key costs 5 to 6.3 bytes of it, less than a Go map's
// slot, and one hash per call instead of two.

// slotPos is the mask of a slot's position bits; maxShardKeys the most
// entries a shard holds, beyond which its new keys overflow.
const (
	slotPos      = 1<<24 - 1
	maxShardKeys = slotPos - 1
)

func slot(tag uint32, i int) uint32 { return tag<<24 | uint32(i+1) }

// tableSize is the table that holds n keys at most two thirds full.
func tableSize(n int) int { return max(8, 3*n/2+1) }

// home is where the probe of tag starts in a table of n slots.
func home(tag uint32, n int) uint32 { return uint32(uint64(tag) * uint64(n) >> 32) }

// locate returns the position of key's entry, or -1.
func (s *shard[K]) locate(key K, tag uint32) int {
	t := s.table
	if len(t) == 0 {
		return -1
	}
	n, hi := uint32(len(t)), tag<<24
	for p := home(tag, len(t)); ; p = next(p, n) {
		sl := t[p]
		if sl == 0 {
			return -1
		}
		if sl&^slotPos == hi {
			if i := int(sl&slotPos) - 1; s.ents.at(i).key == key {
				return i
			}
		}
	}
}

// place records that the key with tag is at position i, which is new; the
// entry must already be in s.ents.
func (s *shard[K]) place(tag uint32, i int) {
	if 5*s.ents.n > 4*len(s.table) {
		s.resize(max(8, len(s.table)+len(s.table)/4), i)
	}
	put(s.table, tag, slot(tag, i))
}

// next is the slot after p in a table of n.
func next(p, n uint32) uint32 {
	if p++; p == n {
		return 0
	}
	return p
}

// put stores sl in t, from the home of tag on.
func put(t []uint32, tag, sl uint32) {
	n := uint32(len(t))
	for p := home(tag, len(t)); ; p = next(p, n) {
		if t[p] == 0 {
			t[p] = sl
			return
		}
	}
}

// slotTag returns the tag of the key whose slot is sl.
func (s *shard[K]) slotTag(sl uint32) uint32 {
	return s.tag(s.ents.at(int(sl&slotPos) - 1).key)
}

// resize moves the slots into a new table of n slots, but for the entry at
// position skip (-1: none), which is being placed.
func (s *shard[K]) resize(n, skip int) {
	// In the entries' order, which reads them in turn, rather than the
	// slots', which would jump about them.
	t := make([]uint32, n)
	for i := range s.ents.n {
		if i == skip {
			continue // its slot is not in the table yet
		}
		tag := s.tag(s.ents.at(i).key)
		put(t, tag, slot(tag, i))
	}
	s.table = t
}

// slotOf returns where the slot of position i, whose key has tag, is.
func (s *shard[K]) slotOf(tag uint32, i int) uint32 {
	want, n := slot(tag, i), uint32(len(s.table))
	for p := home(tag, len(s.table)); ; p = next(p, n) {
		if s.table[p] == want {
			return p
		}
	}
}

// repoint records that the entry with tag moved from position from to to.
func (s *shard[K]) repoint(tag uint32, from, to int) {
	s.table[s.slotOf(tag, from)] = slot(tag, to)
}

// unplace removes the slot of position i, whose key has tag. The slots
// after it in the probe run move back to fill the gap when that keeps them
// at or after their home, so no tombstones are needed.
func (s *shard[K]) unplace(tag uint32, i int) {
	t := s.table
	n := uint32(len(t))
	dist := func(from, to uint32) uint32 { return (to + n - from) % n } // along the probe
	p := s.slotOf(tag, i)
	for j := next(p, n); t[j] != 0; j = next(j, n) {
		if h := home(s.slotTag(t[j]), len(t)); dist(h, j) >= dist(p, j) {
			t[p] = t[j]
			p = j
		}
	}
	t[p] = 0
}
