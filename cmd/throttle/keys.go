package main

import "hash/maphash"

// keySet counts the distinct keys of a trace by their 64-bit hashes: 8
// bytes and a map slot per key, however long the keys, where the simulator
// itself forgets idle keys. Two keys count as one only when their hashes
// collide, which for a million keys has odds of about 1 in 36 million.
type keySet struct {
	seed   maphash.Seed
	hashes map[uint64]struct{}
}

func newKeySet() keySet {
	return keySet{seed: maphash.MakeSeed(), hashes: make(map[uint64]struct{})}
}

func (k *keySet) add(key string) { k.hashes[maphash.String(k.seed, key)] = struct{}{} }

func (k *keySet) len() int { return len(k.hashes) }
