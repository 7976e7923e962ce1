package htb

import (
	"math"
	"math/bits"

	"github.com/throttlekit/throttle/internal/exact"
)

// i128 is a signed 128-bit integer, for the exact sum of levels counted in
// 1/den of a token: a level is at most 2^63 tokens of up to 2^62 parts.
type i128 struct {
	hi int64
	lo uint64
}

// units returns l as a count of 1/den tokens.
func units(l *exact.Level, den uint64) i128 {
	neg := l.Tokens < 0
	t := uint64(l.Tokens)
	if neg {
		t = -t
	}
	hi, lo := bits.Mul64(t, den)
	v := i128{hi: int64(hi), lo: lo}
	if neg {
		v = v.neg()
	}
	return v.add(i128{lo: l.Frac})
}

func (a i128) add(b i128) i128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	return i128{hi: a.hi + b.hi + int64(c), lo: lo}
}

func (a i128) neg() i128 {
	lo, c := bits.Add64(^a.lo, 1, 0)
	return i128{hi: ^a.hi + int64(c), lo: lo}
}

func (a i128) sub(b i128) i128 { return a.add(b.neg()) }

func (a i128) less(b i128) bool {
	return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo
}

// spareUnits is x's spare in 1/den tokens from the levels as they are:
// its guarantee bucket minus its children's.
func (x *Class) spareUnits(l *exact.Level, kids func(i int) *exact.Level) i128 {
	den := x.g.Den
	s := units(l, den)
	for i := range x.kids {
		s = s.sub(units(kids(i), den))
	}
	return s
}

// spareTokens advances x and its children to now and returns x's spare in
// whole tokens, rounded down, at most x's capacity; negative means none.
func (x *Class) spareTokens(now int64) int64 {
	x.g.Advance(&x.gl, now)
	for _, k := range x.kids {
		k.g.Advance(&k.gl, now)
	}
	s := x.spareUnits(&x.gl, func(i int) *exact.Level { return &x.kids[i].gl })
	if s.hi < 0 {
		return -1
	}
	if uint64(s.hi) >= x.g.Den {
		return x.g.Cap
	}
	q, _ := bits.Div64(uint64(s.hi), s.lo, x.g.Den)
	return int64(min(q, uint64(x.g.Cap)))
}

// spareCovers advances x and its children to now and reports whether x's
// spare covers n tokens.
func (x *Class) spareCovers(n, now int64) bool {
	x.g.Advance(&x.gl, now)
	if len(x.kids) == 0 {
		return x.gl.Tokens >= n
	}
	den := x.g.Den
	s := units(&x.gl, den)
	for _, k := range x.kids {
		k.g.Advance(&k.gl, now)
		s = s.sub(units(&k.gl, den))
	}
	return !s.less(units(&exact.Level{Tokens: n}, den))
}

// spareCoversAt reports whether x's spare would cover n at t, with no
// grant in between, leaving the levels as they are.
func (x *Class) spareCoversAt(n, t int64) bool {
	l := x.gl
	x.g.Advance(&l, t)
	if len(x.kids) == 0 {
		return l.Tokens >= n
	}
	var buf [8]exact.Level
	kl := buf[:0]
	for _, k := range x.kids {
		c := k.gl
		k.g.Advance(&c, t)
		kl = append(kl, c)
	}
	s := x.spareUnits(&l, func(i int) *exact.Level { return &kl[i] })
	return !s.less(units(&exact.Level{Tokens: n}, x.g.Den))
}

// spareReady returns the first instant at or after lo at which x's spare
// covers n with no grant in between, or never. While x is below its
// capacity its spare does not fall, as it refills at least as fast as all
// its children together; once x is full the spare can only fall, as the
// children keep filling. So the spare is a nondecreasing function of time
// up to the instant x fills, where the search for the first instant ends.
func (x *Class) spareReady(n, lo int64) int64 {
	if len(x.kids) == 0 {
		return max(lo, x.g.ReadyAt(&x.gl, n))
	}
	if x.spareCoversAt(n, lo) {
		return lo
	}
	hi := x.g.ReadyAt(&x.gl, x.g.Cap)
	if hi <= lo || hi == exact.Never || !x.spareCoversAt(n, hi) {
		return exact.Never
	}
	// The spare covers n at hi and not at lo: find the first instant.
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if x.spareCoversAt(n, mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// vtag is a virtual time of fair borrowing: q + r/den nanoseconds of
// service at the guaranteed rate.
type vtag struct {
	q, r, den uint64
}

func (a vtag) less(b vtag) bool {
	if a.q != b.q {
		return a.q < b.q
	}
	if a.r == 0 || b.r == 0 {
		return a.r < b.r
	}
	h1, l1 := bits.Mul64(a.r, b.den)
	h2, l2 := bits.Mul64(b.r, a.den)
	return h1 < h2 || h1 == h2 && l1 < l2
}

// plus returns a + n/rate, the rate being w tokens every den ns; the
// remainder of a is first carried to the denominator w, rounding up.
func (a vtag) plus(n int64, den, w uint64) vtag {
	r := uint64(0)
	if a.r != 0 && a.den != 0 {
		if a.den == w {
			r = a.r
		} else {
			hi, lo := bits.Mul64(a.r, w)
			q, rem := bits.Div64(hi, lo, a.den)
			if rem != 0 {
				q++
			}
			r = q
		}
	}
	q := a.q
	if r >= w {
		q, r = q+1, r-w
	}
	hi, lo := bits.Mul64(uint64(n), den)
	lo, c := bits.Add64(lo, r, 0)
	hi += c
	if hi >= w {
		return vtag{q: math.MaxUint64, den: w}
	}
	dq, rem := bits.Div64(hi, lo, w)
	if q > math.MaxUint64-dq {
		return vtag{q: math.MaxUint64, den: w}
	}
	return vtag{q: q + dq, r: rem, den: w}
}

func maxTag(a, b vtag) vtag {
	if a.less(b) {
		return b
	}
	return a
}
