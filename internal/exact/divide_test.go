package exact

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDividerMatchesDivision compares the divider with the hardware
// division on divisors of every size and shape and on the dividends where
// rounding goes wrong first: around multiples of d and at the ends.
func TestDividerMatchesDivision(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ds := []uint64{1, 2, 3, 5, 6, 7, 10, 641, 1_000_000_000, 999_999_937, 1 << 32, 1<<32 + 1,
		1<<63 - 1, 1 << 63, 1<<63 + 1, math.MaxUint64 - 1, math.MaxUint64}
	for range 2000 {
		ds = append(ds, r.Uint64()>>r.UintN(64))
	}
	for _, d := range ds {
		if d == 0 {
			continue
		}
		v := NewDivider(d)
		ns := []uint64{0, 1, d - 1, d, d + 1, math.MaxUint64, math.MaxUint64 - 1, math.MaxUint64 - d}
		for range 200 {
			q := r.Uint64() / d
			k := r.Uint64N(q + 1) // a multiple of d, then its neighbours
			ns = append(ns, k*d, k*d+d-1, r.Uint64(), r.Uint64()>>r.UintN(64))
			if k > 0 {
				ns = append(ns, k*d-1)
			}
		}
		for _, n := range ns {
			if got, want := v.Div(n), n/d; got != want {
				t.Fatalf("%d / %d = %d, want %d", n, d, got, want)
			}
		}
	}
}

// FuzzDivider checks any divisor and dividend.
func FuzzDivider(f *testing.F) {
	f.Add(uint64(7), uint64(1_000_000_000))
	f.Add(uint64(math.MaxUint64), uint64(999_999_937))
	f.Fuzz(func(t *testing.T, n, d uint64) {
		if d == 0 {
			return
		}
		v := NewDivider(d)
		if got, want := v.Div(n), n/d; got != want {
			t.Fatalf("%d / %d = %d, want %d", n, d, got, want)
		}
	})
}
