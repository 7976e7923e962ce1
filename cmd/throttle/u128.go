package main

import (
	"math/big"
	"math/bits"
	"time"
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

// mul returns a*b.
func mul(a, b uint64) u128 {
	hi, lo := bits.Mul64(a, b)
	return u128{hi, lo}
}

// plus returns u+v; the models' sums stay below 2^128 (an instant times a
// rate, plus a burst's worth).
func (u u128) plus(v u128) u128 {
	lo, c := bits.Add64(u.lo, v.lo, 0)
	return u128{u.hi + v.hi + c, lo}
}

// minus returns u-v, for v <= u.
func (u u128) minus(v u128) u128 {
	lo, b := bits.Sub64(u.lo, v.lo, 0)
	return u128{u.hi - v.hi - b, lo}
}

func (u u128) less(v u128) bool { return u.hi < v.hi || u.hi == v.hi && u.lo < v.lo }

func maxU(u, v u128) u128 {
	if u.less(v) {
		return v
	}
	return u
}

// ceilDiv returns u/d rounded up, as an instant, saturating at never.
func (u u128) ceilDiv(d uint64) time.Duration {
	if u.hi >= d {
		return never
	}
	q, r := bits.Div64(u.hi, u.lo, d)
	if r != 0 {
		q++
	}
	if q == 0 && r != 0 || q > uint64(never) {
		return never
	}
	return time.Duration(q)
}

// floorDiv returns u/v rounded down, saturating at 2^64-1.
func (u u128) floorDiv(v u128) uint64 {
	if v.hi == 0 && u.hi < v.lo {
		q, _ := bits.Div64(u.hi, u.lo, v.lo)
		return q
	}
	q := new(big.Int).Quo(u.big(), v.big())
	if !q.IsUint64() {
		return ^uint64(0)
	}
	return q.Uint64()
}
