package throttle

// A shard's table maps keys to positions in its entries, by open addressing
// with linear probing. A slot packs 32 bits of the key's hash (the tag,
// from the high half of the hash that chose the shard) with the position
// plus one; 0 is an empty slot. A probe compares keys only when the tags
// match, the table grows without hashing a key again, and a slot costs 8
// bytes, kept between three eighths and three quarters full: less than a Go
// map's slot for most key types, and one hash per call instead of two.

func slot(tag uint32, i int) uint64 { return uint64(tag)<<32 | uint64(uint32(i+1)) }

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
	mask := uint32(len(t) - 1)
	for p := tag & mask; ; p = (p + 1) & mask {
		sl := t[p]
		if sl == 0 {
			return -1
		}
		if uint32(sl>>32) == tag {
			if i := int(uint32(sl)) - 1; s.ents[i].key == key {
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
	put(s.table, slot(tag, i))
}

func put(t []uint64, sl uint64) {
	mask := uint32(len(t) - 1)
	for p := uint32(sl>>32) & mask; ; p = (p + 1) & mask {
		if t[p] == 0 {
			t[p] = sl
			return
		}
	}
}

// resize moves the slots into a new table of n slots, a power of two.
func (s *shard[K]) resize(n int) {
	t := make([]uint64, n)
	for _, sl := range s.table {
		if sl != 0 {
			put(t, sl)
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
		home := uint32(t[j]>>32) & mask
		if (j-home)&mask >= (j-p)&mask {
			t[p] = t[j]
			p = j
		}
	}
	t[p] = 0
}
