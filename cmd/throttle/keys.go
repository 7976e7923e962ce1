package main

import (
	"hash/maphash"
	"time"
)

// keySet counts the distinct keys of a trace by their 64-bit hashes, and
// keeps each key's span, its first arrival to its last decision: 24 bytes
// and a map slot per key, however long the keys, where the simulator itself
// forgets idle keys. Two keys count as one only when their hashes collide,
// which for a million keys has odds of about 1 in 36 million.
type keySet struct {
	seed  maphash.Seed
	spans map[uint64]keySpan
}

type keySpan struct{ first, last time.Duration }

func newKeySet() keySet {
	return keySet{seed: maphash.MakeSeed(), spans: make(map[uint64]keySpan)}
}

// arrive records that key's state was made at t, for a request arriving
// then: its first arrival, unless the key was seen before and forgotten.
func (k *keySet) arrive(key string, t time.Duration) {
	h := maphash.String(k.seed, key)
	if _, ok := k.spans[h]; !ok {
		k.spans[h] = keySpan{first: t, last: t}
	}
}

// leave records key's last decision so far, when its state is dropped.
func (k *keySet) leave(key string, t time.Duration) {
	h := maphash.String(k.seed, key)
	sp := k.spans[h]
	sp.last = max(sp.last, t)
	k.spans[h] = sp
}

func (k *keySet) len() int { return len(k.spans) }

// active sums the spans of the keys, in nanoseconds.
func (k *keySet) active() u128 {
	var sum u128
	for _, sp := range k.spans {
		sum.add(uint64(sp.last - sp.first))
	}
	return sum
}
