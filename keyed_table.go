package throttle

// A shard's table maps keys to positions in its entries, by open addressing
// with linear probing. A slot is 4 bytes: the top 8 bits of the key's tag
// (32 bits of its hash, from the high half of the hash that chose the
// shard) and the position plus one in the low 24; 0 is an empty slot. A
// key's probe starts at its tag masked to the table, and compares keys
// only when the stored bits match (a false match costs one key comparison
// in 256). Growing and deleting, which need the home of slots already
// placed, hash their keys again: both are rare next to lookups. The table
// is kept between three eighths and three quarters full, so a key costs
// 5 to 11 bytes of it: less than a Go map's slot, and one hash per call
// instead of two.

// slotPos is the mask of a slot's position bits; maxShardKeys the most
// entries a shard holds, beyond which its new keys overflow.
const (
	slotPos      = 1<<24 - 1
	maxShardKeys = slotPos - 1
)

func slot(tag uint32, i int) uint32 { return tag&^slotPos | uint32(i+1) }

// tableSize is the smallest table that holds n keys at most half full.
func tableSize(n int) int {
	size := 8
	for size < 2*n {
		size *= 2
	}
	return size
}

// locate returns the position of key's entry, or -1.
func (s *shard[K]) locate(key K, tag uint32) int {
	t := s.table
	if len(t) == 0 {
		return -1
	}
	mask, hi := uint32(len(t)-1), tag&^slotPos
	for p := tag & mask; ; p = (p + 1) & mask {
		sl := t[p]
		if sl == 0 {
			return -1
		}
		if sl&^slotPos == hi {
			if i := int(sl&slotPos) - 1; s.ents[i].key == key {
				return i
			}
		}
	}
}

// place records that the key with tag is at position i, which is new; the
// entry must already be in s.ents.
func (s *shard[K]) place(tag uint32, i int) {
	if 4*len(s.ents) > 3*len(s.table) {
		s.resize(max(8, 2*len(s.table)))
	}
	put(s.table, tag, slot(tag, i))
}

// put stores sl in t, from the home of tag on.
func put(t []uint32, tag, sl uint32) {
	mask := uint32(len(t) - 1)
	for p := tag & mask; ; p = (p + 1) & mask {
		if t[p] == 0 {
			t[p] = sl
			return
		}
	}
}

// slotTag returns the tag of the key whose slot is sl.
func (s *shard[K]) slotTag(sl uint32) uint32 {
	return s.tag(s.ents[int(sl&slotPos)-1].key)
}

// resize moves the slots into a new table of n slots, a power of two.
func (s *shard[K]) resize(n int) {
	t := make([]uint32, n)
	for _, sl := range s.table {
		if sl != 0 {
			put(t, s.slotTag(sl), sl)
		}
	}
	s.table = t
}

// slotOf returns where the slot of position i, whose key has tag, is.
func (s *shard[K]) slotOf(tag uint32, i int) uint32 {
	want, mask := slot(tag, i), uint32(len(s.table)-1)
	for p := tag & mask; ; p = (p + 1) & mask {
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
	mask := uint32(len(t) - 1)
	p := s.slotOf(tag, i)
	for j := (p + 1) & mask; t[j] != 0; j = (j + 1) & mask {
		home := s.slotTag(t[j]) & mask
		if (j-home)&mask >= (j-p)&mask {
			t[p] = t[j]
			p = j
		}
	}
	t[p] = 0
}
