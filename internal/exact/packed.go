package exact

import "math/bits"

// RefillTime is how long s takes to refill from empty, rounded up and
// saturated at Never; 0 if it never refills, since no use of such a limit
// is made cheaper by keeping it.
func (s *Shape) RefillTime() int64 {
	if s.Num == 0 {
		return 0
	}
	var l Level
	return s.ReadyAt(&l, s.Cap)
}

// Packed is a compact key's first level in 16 bytes: tokens*den + frac, and
// the instant. It is exact for a level from 0 to capacity tokens, which a
// compact key's always is (it takes only what it has, and never owes), in
// a profile whose (capacity+1)*den fits in 64 bits; the first level of a
// key of any other (wide) profile is kept in its own extra.
type Packed struct {
	v    uint64
	last int64
}

// Pack returns l packed, for a level Packs says fits.
func (s *Shape) Pack(l Level) Packed { return Packed{v: uint64(l.Tokens)*s.Den + l.Frac, last: l.Last} }

// Unpack returns the level pk holds.
func (s *Shape) Unpack(pk Packed) Level {
	t := s.PerDen.Div(pk.v)
	return Level{Tokens: int64(t), Frac: pk.v - t*s.Den, Last: pk.last}
}

// Packs reports whether a level of s from 0 to capacity fits in a Packed.
func (s *Shape) Packs() bool {
	if s.Cap < 0 {
		return false
	}
	hi, _ := bits.Mul64(uint64(s.Cap)+1, s.Den)
	return hi == 0
}
