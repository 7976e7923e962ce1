package trace

import (
	"errors"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseDecimal(t *testing.T) {
	tests := []struct {
		in   string
		want Decimal
		err  error
	}{
		{"0", Decimal{}, nil},
		{"000", Decimal{}, nil},
		{"0.000", Decimal{}, nil},
		{"0e5", Decimal{}, nil},
		{"1", Decimal{1, 0}, nil},
		{"+1", Decimal{1, 0}, nil},
		{"100", Decimal{1, 2}, nil},
		{"105", Decimal{105, 0}, nil},
		{"1.50", Decimal{15, -1}, nil},
		{"0.5", Decimal{5, -1}, nil},
		{".25", Decimal{25, -2}, nil},
		{"2.", Decimal{2, 0}, nil},
		{"0.05", Decimal{5, -2}, nil},
		{"1e-3", Decimal{1, -3}, nil},
		{"1.5E6", Decimal{15, 5}, nil},
		{"1e+2", Decimal{1, 2}, nil},
		{"1e-10", Decimal{1, -10}, nil},
		{"1234567890123456789", Decimal{1234567890123456789, 0}, nil},
		{"1234567890123456789000", Decimal{1234567890123456789, 3}, nil},
		{"0.00000000000000000000001", Decimal{1, -23}, nil},
		{"12345678901234567890", Decimal{1234567890123456789, 1}, nil},
		{"12345678901234567891", Decimal{}, ErrRange},
		{"1.2345678901234567891", Decimal{}, ErrRange},
		{"1e99999999", Decimal{}, ErrRange},
		{"-1", Decimal{}, ErrNegative},
		{"-0.5", Decimal{}, ErrNegative},
		{"-1e99999999", Decimal{}, ErrNegative},
		{"-abc", Decimal{}, ErrSyntax},
		{"--1", Decimal{}, ErrSyntax},
		{"", Decimal{}, ErrSyntax},
		{".", Decimal{}, ErrSyntax},
		{"+", Decimal{}, ErrSyntax},
		{"-", Decimal{}, ErrSyntax},
		{"e5", Decimal{}, ErrSyntax},
		{"1e", Decimal{}, ErrSyntax},
		{"1e+", Decimal{}, ErrSyntax},
		{"1..2", Decimal{}, ErrSyntax},
		{"1.2.3", Decimal{}, ErrSyntax},
		{"1 ", Decimal{}, ErrSyntax},
		{" 1", Decimal{}, ErrSyntax},
		{"1_000", Decimal{}, ErrSyntax},
		{"0x10", Decimal{}, ErrSyntax},
		{"Inf", Decimal{}, ErrSyntax},
		{"NaN", Decimal{}, ErrSyntax},
		{"abc", Decimal{}, ErrSyntax},
		{"1/2", Decimal{}, ErrSyntax},
	}
	for _, tt := range tests {
		got, err := ParseDecimal(tt.in)
		if !errors.Is(err, tt.err) || (tt.err != nil) != (err != nil) {
			t.Errorf("ParseDecimal(%q) error = %v, want %v", tt.in, err, tt.err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseDecimal(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestScaled(t *testing.T) {
	tests := []struct {
		in   string
		k    int
		want int64
		err  error
	}{
		{"0.5", 1, 5, nil},
		{"0.5", 0, 0, ErrNotWhole},
		{"2", 3, 2000, nil},
		{"0", 30, 0, nil},
		{"9.223372036854775807", 18, 9223372036854775807, nil},
		{"9.223372036854775808", 18, 0, ErrRange},
		{"1", 19, 0, ErrRange},
		{"1e18", 0, 1e18, nil},
		{"1e-9", 9, 1, nil},
	}
	for _, tt := range tests {
		d, err := ParseDecimal(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Scaled(tt.k)
		if !errors.Is(err, tt.err) || (tt.err != nil) != (err != nil) || got != tt.want {
			t.Errorf("%q.Scaled(%d) = %d, %v; want %d, %v", tt.in, tt.k, got, err, tt.want, tt.err)
		}
	}
}

func TestParseSeconds(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  error
	}{
		{"0", 0, nil},
		{"1", time.Second, nil},
		{"0.1", 100 * time.Millisecond, nil},
		{"1.5", 1500 * time.Millisecond, nil},
		{"1e-9", 1, nil},
		{"0.000000001000", 1, nil},
		{"1e-10", 0, ErrTooFine},
		{"0.0000000015", 0, ErrTooFine},
		{"9223372036.854775807", 1<<63 - 1, nil},
		{"9223372036.854775808", 0, ErrRange},
		{"-1", 0, ErrNegative},
		{"x", 0, ErrSyntax},
	}
	for _, tt := range tests {
		got, err := ParseSeconds(tt.in)
		if !errors.Is(err, tt.err) || (tt.err != nil) != (err != nil) || got != tt.want {
			t.Errorf("ParseSeconds(%q) = %v, %v; want %v, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestDecimalString(t *testing.T) {
	for _, s := range []string{"0", "1", "100", "0.5", "0.05", "12.5", "1000000"} {
		d, err := ParseDecimal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.String(); got != s {
			t.Errorf("ParseDecimal(%q).String() = %q", s, got)
		}
	}
}

// checkDecimal compares d with math/big's exact reading of s, which accepts
// a superset of the syntax.
// checkDecimal checks d against math/big's reading of s. big.Rat refuses
// a written exponent whose scale, counted with the fractional digits, is
// past 10^±1e6 ("1.000e-999999"), although the value is within
// ParseDecimal's range; so the mantissa and the exponent are read apart,
// and compared with d at the scale their difference gives, which the
// mantissa's length bounds.
func checkDecimal(t *testing.T, s string, d Decimal) {
	t.Helper()
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("ParseDecimal(%q) = %+v, but its exponent does not parse: %v", s, d, err)
		}
		mant, exp = s[:i], e
	}
	m, ok := new(big.Rat).SetString(mant)
	if !ok {
		t.Fatalf("ParseDecimal(%q) = %+v, but math/big rejects its mantissa %q", s, d, mant)
	}
	if d.Coef == 0 {
		if m.Sign() != 0 || d.Exp != 0 {
			t.Fatalf("ParseDecimal(%q) = %+v, want %v x 10^%d (normalised)", s, d, m, exp)
		}
		return
	}
	// d = Coef x 10^Exp and s = m x 10^exp: equal when m x 10^(exp-Exp)
	// is Coef.
	shift := exp - int64(d.Exp)
	if shift > 1000 || shift < -1000 {
		t.Fatalf("ParseDecimal(%q) = %+v, want %v x 10^%d", s, d, m, exp)
	}
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(max(shift, -shift)), nil))
	if shift >= 0 {
		m.Mul(m, p)
	} else {
		m.Quo(m, p)
	}
	if m.Cmp(new(big.Rat).SetInt(new(big.Int).SetUint64(d.Coef))) != 0 {
		t.Fatalf("ParseDecimal(%q) = %+v, want %v x 10^%d", s, d, m, exp)
	}
	if d.Coef%10 == 0 {
		t.Fatalf("ParseDecimal(%q) = %+v is not normalised", s, d)
	}
	// Where math/big reads s whole, it agrees.
	if want, ok := new(big.Rat).SetString(s); ok {
		got := new(big.Rat).SetInt(new(big.Int).SetUint64(d.Coef))
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(d.Exp))), nil)
		if d.Exp >= 0 {
			got.Mul(got, new(big.Rat).SetInt(p))
		} else {
			got.Quo(got, new(big.Rat).SetInt(p))
		}
		if got.Cmp(want) != 0 {
			t.Fatalf("ParseDecimal(%q) = %+v = %v, want %v", s, d, got, want)
		}
	}
}

func abs(e int32) int32 {
	if e < 0 {
		return -e
	}
	return e
}

func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"0", "1", "0.5", ".25", "1e-3", "1.5E6", "-1", "1234567890123456789", "12345678901234567890", "1e99999999", "00.0100", "+3", "1e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDecimal(s)
		if err != nil {
			return
		}
		if len(s) < 200 {
			checkDecimal(t, s, d)
		}
		// Scaling to its own places is always whole.
		if v, err := d.Scaled(d.Places()); err == nil && d.Places() > 0 && v%10 == 0 {
			t.Fatalf("%q scaled by its places = %d ends in 0", s, v)
		} else if errors.Is(err, ErrNotWhole) {
			t.Fatalf("%q.Scaled(Places) not whole", s)
		}
		// String round-trips.
		if d2, err := ParseDecimal(d.String()); err != nil || d2 != d {
			t.Fatalf("ParseDecimal(%q.String() = %q) = %+v, %v", s, d.String(), d2, err)
		}
	})
}
