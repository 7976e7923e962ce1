package main

import (
	"math/big"
	"math/bits"
)

// u128 is an unsigned 128-bit counter: sums of a million int64 costs or
// durations cannot overflow it.
type u128 struct{ hi, lo uint64 }

func (u *u128) add(v uint64) {
	var c uint64
	u.lo, c = bits.Add64(u.lo, v, 0)
	u.hi += c
}

func (u u128) big() *big.Int {
	b := new(big.Int).SetUint64(u.hi)
	b.Lsh(b, 64)
	return b.Or(b, new(big.Int).SetUint64(u.lo))
}

func (u u128) String() string { return u.big().String() }

func (u u128) float() float64 {
	f, _ := new(big.Float).SetInt(u.big()).Float64()
	return f
}
