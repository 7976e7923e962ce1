package exact

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// MinTokens bounds debt so that capacity-tokens always fits in a uint64.
const MinTokens = math.MinInt64 + 1

// Never is the instant of an event that will not happen.
const Never = math.MaxInt64

// Level is the exact fill of one bucket at instant last (nanoseconds on the
// bucket's monotonic time line): tokens whole tokens plus frac/den of a token,
// where den is the bucket's reduced period. Keeping the fraction as an integer
// remainder is what makes every decision equal exact rational arithmetic.
type Level struct {
	Tokens int64  // whole tokens; negative while in debt
	Frac   uint64 // in [0, den)
	Last   int64  // instant the level was computed for
}

// Shape is the part of a bucket's configuration the arithmetic needs:
// capacity, and the rate as num tokens every den nanoseconds, reduced by
// their gcd.
type Shape struct {
	Cap    int64
	Num    uint64  // 0: never refills
	Den    uint64  // > 0
	PerDen Divider // divides by den
	Inf    bool    // Inf: always full, and any cost passes
}

// Advance moves l forward to now. Time that runs backwards adds nothing and
// never moves l.Last back, so a clock that jumps cannot mint tokens.
func (s *Shape) Advance(l *Level, now int64) {
	if s.Inf {
		l.Tokens, l.Frac, l.Last = s.Cap, 0, max(l.Last, now)
		return
	}
	if now <= l.Last {
		return
	}
	dt := uint64(now - l.Last)
	l.Last = now
	if l.Tokens >= s.Cap {
		l.Tokens, l.Frac = s.Cap, 0
		return
	}
	if s.Num == 0 {
		return
	}
	addHi, addLo := bits.Mul64(dt, s.Num)
	if tot, carry := bits.Add64(addLo, l.Frac, 0); addHi == 0 && carry == 0 {
		// The common case: the refill and the fraction fit in 64 bits, and
		// one division says both how many tokens they make and whether that
		// fills the bucket, since the level reaches capacity exactly when
		// tot/den >= capacity-tokens. Less than a token needs no division.
		if tot < s.Den {
			l.Frac = tot
			return
		}
		q := s.PerDen.Div(tot)
		r := tot - q*s.Den
		if q >= uint64(s.Cap)-uint64(l.Tokens) {
			l.Tokens, l.Frac = s.Cap, 0
			return
		}
		l.Tokens = int64(uint64(l.Tokens) + q)
		l.Frac = r
		return
	}
	// need is the number of 1/den token units missing to full; add is what
	// dt brings. Both can exceed 64 bits for huge capacities or idle times.
	gapHi, gapLo := bits.Mul64(uint64(s.Cap)-uint64(l.Tokens), s.Den)
	needLo, borrow := bits.Sub64(gapLo, l.Frac, 0)
	needHi := gapHi - borrow
	if addHi > needHi || (addHi == needHi && addLo >= needLo) {
		l.Tokens, l.Frac = s.Cap, 0
		return
	}
	totLo, carry := bits.Add64(addLo, l.Frac, 0)
	totHi := addHi + carry
	// tot < need <= (capacity-tokens)*den, so the quotient fits in 64 bits
	// and totHi < den, as Div64 requires.
	q, r := bits.Div64(totHi, totLo, s.Den)
	l.Tokens = int64(uint64(l.Tokens) + q)
	l.Frac = r
}

// ReadyAt reports the first instant at or after l.Last at which l holds cost
// tokens, rounded up to the nanosecond so that the level at that instant is
// enough and one nanosecond earlier is not. It returns Never when the level
// will not get there (no refill, or cost above capacity).
func (s *Shape) ReadyAt(l *Level, cost int64) int64 {
	if l.Tokens >= cost || s.Inf {
		return l.Last
	}
	if s.Num == 0 || cost > s.Cap {
		return Never
	}
	hi, lo := bits.Mul64(uint64(cost)-uint64(l.Tokens), s.Den)
	lo, borrow := bits.Sub64(lo, l.Frac, 0)
	hi -= borrow
	if hi >= s.Num {
		return Never
	}
	q, r := bits.Div64(hi, lo, s.Num)
	if r != 0 {
		q++
	}
	return AddSat(l.Last, q)
}

// Take spends cost, which may leave the level in debt.
func (l *Level) Take(cost int64) {
	l.Tokens = SubSat(l.Tokens, cost)
}

// Give returns n tokens, never above capacity.
func (s *Shape) Give(l *Level, n int64) {
	if uint64(n) >= uint64(s.Cap)-uint64(l.Tokens) {
		l.Tokens, l.Frac = s.Cap, 0
		return
	}
	l.Tokens += n
}

// Value is the level as a float, for reporting only.
func (s *Shape) Value(l *Level) float64 {
	return float64(l.Tokens) + float64(l.Frac)/float64(s.Den)
}

// Rescale converts the fraction to a new denominator, rounding down so that
// a rate change never mints a partial token.
func Rescale(frac, oldDen, newDen uint64) uint64 {
	if frac == 0 || oldDen == newDen {
		return frac
	}
	hi, lo := bits.Mul64(frac, newDen)
	q, _ := bits.Div64(hi, lo, oldDen) // frac < oldDen, so hi < oldDen
	return q
}

// AddSat returns t+d, saturating at Never.
func AddSat(t int64, d uint64) int64 {
	if d >= uint64(Never) || t > Never-int64(d) {
		return Never
	}
	return t + int64(d)
}

// SubSat returns a-b for b >= 0, saturating at MinTokens.
func SubSat(a, b int64) int64 {
	if a < MinTokens+b {
		return MinTokens
	}
	return a - b
}

// NewShape validates a rate of tokens every period (inf: the rate that
// never limits) for a bucket of the given capacity, and reduces the rate
// by the gcd of tokens and period, which keeps the fraction small.
func NewShape(capacity, tokens int64, period time.Duration, inf bool) (Shape, error) {
	if capacity < 0 {
		return Shape{}, fmt.Errorf("throttle: capacity must not be negative, got %d", capacity)
	}
	if inf {
		return Shape{Cap: capacity, Num: 1, Den: 1, PerDen: NewDivider(1), Inf: true}, nil
	}
	if tokens < 0 {
		return Shape{}, fmt.Errorf("throttle: rate must not be negative, got %d tokens", tokens)
	}
	if period <= 0 {
		return Shape{}, fmt.Errorf("throttle: rate period must be positive, got %v", period)
	}
	num, den := uint64(tokens), uint64(period)
	if num == 0 {
		return Shape{Cap: capacity, Den: 1, PerDen: NewDivider(1)}, nil
	}
	g := GCD(num, den)
	return Shape{Cap: capacity, Num: num / g, Den: den / g, PerDen: NewDivider(den / g)}, nil
}

// RateLess reports whether a rate of at tokens every ap is below one of
// bt every bp, exactly.
func RateLess(at int64, ap time.Duration, bt int64, bp time.Duration) bool {
	h1, l1 := bits.Mul64(uint64(at), uint64(bp))
	h2, l2 := bits.Mul64(uint64(bt), uint64(ap))
	return h1 < h2 || h1 == h2 && l1 < l2
}
