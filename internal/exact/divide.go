package exact

import "math/bits"

// Divider divides uint64 values by a fixed d > 0 with a multiply and a
// shift. A hardware division is most of the cost of a refill; the refill's
// divisor, the reduced period, changes only with the rate, so the
// reciprocal is worked out once. This is libdivide's unsigned 64-bit
// algorithm (Granlund and Montgomery, "Division by invariant integers
// using multiplication", PLDI 1994).
type Divider struct {
	magic uint64 // 0: d is a power of two, and the quotient is a shift
	shift uint8
	add   bool // the magic number needs 65 bits; its top bit is added back
}

func NewDivider(d uint64) Divider {
	l := uint8(63 - bits.LeadingZeros64(d)) // floor(log2(d))
	if d&(d-1) == 0 {
		return Divider{shift: l}
	}
	// m = 2^(64+l) / d; the high word 2^l is below d, as Div64 needs.
	m, rem := bits.Div64(1<<l, 0, d)
	if d-rem < 1<<l {
		return Divider{magic: m + 1, shift: l}
	}
	// 2^(65+l) / d from the quotient and remainder above; m overflows on
	// purpose, the lost bit being the one add restores.
	m += m
	if twice := rem + rem; twice >= d || twice < rem {
		m++
	}
	return Divider{magic: m + 1, shift: l, add: true}
}

// Div returns n / d.
func (v *Divider) Div(n uint64) uint64 {
	if v.magic == 0 {
		return n >> v.shift
	}
	q, _ := bits.Mul64(v.magic, n)
	if v.add {
		return ((n-q)>>1 + q) >> v.shift
	}
	return q >> v.shift
}

func GCD(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
