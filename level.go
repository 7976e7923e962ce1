package throttle

import (
	"math"
	"math/bits"
)

// minTokens bounds debt so that capacity-tokens always fits in a uint64.
const minTokens = math.MinInt64 + 1

// never is the instant of an event that will not happen.
const never = math.MaxInt64

// level is the exact fill of one bucket at instant last (nanoseconds on the
// bucket's monotonic time line): tokens whole tokens plus frac/den of a token,
// where den is the bucket's reduced period. Keeping the fraction as an integer
// remainder is what makes every decision equal exact rational arithmetic.
type level struct {
	tokens int64  // whole tokens; negative while in debt
	frac   uint64 // in [0, den)
	last   int64  // instant the level was computed for
}

// shape is the part of a bucket's configuration the arithmetic needs:
// capacity, and the rate as num tokens every den nanoseconds, reduced by
// their gcd.
type shape struct {
	capacity int64
	num      uint64  // 0: never refills
	den      uint64  // > 0
	perDen   divider // divides by den
	inf      bool    // Inf: always full, and any cost passes
}

// advance moves l forward to now. Time that runs backwards adds nothing and
// never moves l.last back, so a clock that jumps cannot mint tokens.
func (s *shape) advance(l *level, now int64) {
	if s.inf {
		l.tokens, l.frac, l.last = s.capacity, 0, max(l.last, now)
		return
	}
	if now <= l.last {
		return
	}
	dt := uint64(now - l.last)
	l.last = now
	if l.tokens >= s.capacity {
		l.tokens, l.frac = s.capacity, 0
		return
	}
	if s.num == 0 {
		return
	}
	addHi, addLo := bits.Mul64(dt, s.num)
	if tot, carry := bits.Add64(addLo, l.frac, 0); addHi == 0 && carry == 0 {
		// The common case: the refill and the fraction fit in 64 bits, and
		// one division says both how many tokens they make and whether that
		// fills the bucket, since the level reaches capacity exactly when
		// tot/den >= capacity-tokens. Less than a token needs no division.
		if tot < s.den {
			l.frac = tot
			return
		}
		q := s.perDen.div(tot)
		r := tot - q*s.den
		if q >= uint64(s.capacity)-uint64(l.tokens) {
			l.tokens, l.frac = s.capacity, 0
			return
		}
		l.tokens = int64(uint64(l.tokens) + q)
		l.frac = r
		return
	}
	// need is the number of 1/den token units missing to full; add is what
	// dt brings. Both can exceed 64 bits for huge capacities or idle times.
	gapHi, gapLo := bits.Mul64(uint64(s.capacity)-uint64(l.tokens), s.den)
	needLo, borrow := bits.Sub64(gapLo, l.frac, 0)
	needHi := gapHi - borrow
	if addHi > needHi || (addHi == needHi && addLo >= needLo) {
		l.tokens, l.frac = s.capacity, 0
		return
	}
	totLo, carry := bits.Add64(addLo, l.frac, 0)
	totHi := addHi + carry
	// tot < need <= (capacity-tokens)*den, so the quotient fits in 64 bits
	// and totHi < den, as Div64 requires.
	q, r := bits.Div64(totHi, totLo, s.den)
	l.tokens = int64(uint64(l.tokens) + q)
	l.frac = r
}

// readyAt reports the first instant at or after l.last at which l holds cost
// tokens, rounded up to the nanosecond so that the level at that instant is
// enough and one nanosecond earlier is not. It returns never when the level
// will not get there (no refill, or cost above capacity).
func (s *shape) readyAt(l *level, cost int64) int64 {
	if l.tokens >= cost || s.inf {
		return l.last
	}
	if s.num == 0 || cost > s.capacity {
		return never
	}
	hi, lo := bits.Mul64(uint64(cost)-uint64(l.tokens), s.den)
	lo, borrow := bits.Sub64(lo, l.frac, 0)
	hi -= borrow
	if hi >= s.num {
		return never
	}
	q, r := bits.Div64(hi, lo, s.num)
	if r != 0 {
		q++
	}
	return addSat(l.last, q)
}

// take spends cost, which may leave the level in debt.
func (l *level) take(cost int64) {
	l.tokens = subSat(l.tokens, cost)
}

// give returns n tokens, never above capacity.
func (s *shape) give(l *level, n int64) {
	if uint64(n) >= uint64(s.capacity)-uint64(l.tokens) {
		l.tokens, l.frac = s.capacity, 0
		return
	}
	l.tokens += n
}

// value is the level as a float, for reporting only.
func (s *shape) value(l *level) float64 {
	return float64(l.tokens) + float64(l.frac)/float64(s.den)
}

// rescale converts the fraction to a new denominator, rounding down so that
// a rate change never mints a partial token.
func rescale(frac, oldDen, newDen uint64) uint64 {
	if frac == 0 || oldDen == newDen {
		return frac
	}
	hi, lo := bits.Mul64(frac, newDen)
	q, _ := bits.Div64(hi, lo, oldDen) // frac < oldDen, so hi < oldDen
	return q
}

// addSat returns t+d, saturating at never.
func addSat(t int64, d uint64) int64 {
	if d >= uint64(never) || t > never-int64(d) {
		return never
	}
	return t + int64(d)
}

// subSat returns a-b for b >= 0, saturating at minTokens.
func subSat(a, b int64) int64 {
	if a < minTokens+b {
		return minTokens
	}
	return a - b
}

// levelTo sets the level of b to n, at most its capacity: the one call
// that goes when a pause ends, whatever the level was, debt included (the
// server's refusal supersedes what the client had counted).
func (b *Bucket) levelTo(n int64) {
	g := b.lock()
	defer g.mu.Unlock()
	now := g.now()
	g.serve(now)
	b.advance(&b.lvl, now)
	n = min(max(n, 0), b.capacity)
	if b.lvl.tokens != n || b.lvl.frac != 0 {
		b.lvl.tokens, b.lvl.frac = n, 0
		g.changed(now)
	}
}
