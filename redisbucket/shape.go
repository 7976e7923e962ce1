package redisbucket

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/throttlekit/throttle"
)

// ErrRange is returned when a limit cannot be computed exactly in the
// script's double-precision arithmetic at any time unit, even a second.
var ErrRange = errors.New("redisbucket: limit out of the exact range of Lua numbers")

// maxExact bounds every intermediate value of the script. Doubles hold
// integers exactly up to 2^53; one bit of margin covers the quotient
// correction in the script's divmod.
const maxExact = 1 << 52

// units are the time units the script can count in, finest first. The
// bucket is exact at the granularity of its unit: the server's clock is
// read in µs and truncated to the unit.
var units = []int64{1, 1_000, 1_000_000} // µs, ms, s

// shape is one limit as the script sees it: cap tokens, refilling num tokens
// every den units of unit µs, reduced by their gcd.
type shape struct {
	name     string
	capacity int64
	num      int64
	den      int64
	unit     int64
	rate     throttle.Rate

	args [4]string // capacity, num, den, unit, formatted once
}

// newShape validates a limit and picks the finest time unit at which every
// intermediate value of the script stays below 2^52: the debt-extended gap
// 2*capacity*den plus den and num. (Waits beyond 2^52 µs, 142 years, are
// reported as 2^52 µs.)
func newShape(name string, capacity int64, rate throttle.Rate) (shape, error) {
	if capacity <= 0 {
		return shape{}, fmt.Errorf("redisbucket: limit %q: capacity must be positive, got %d", name, capacity)
	}
	if rate.Tokens() < 0 {
		return shape{}, fmt.Errorf("redisbucket: limit %q: rate must not be negative, got %v", name, rate)
	}
	if rate.Period() <= 0 {
		return shape{}, fmt.Errorf("redisbucket: limit %q: rate period must be positive, got %v", name, rate)
	}
	s := shape{name: name, capacity: capacity, rate: rate, den: 1, unit: 1}
	if capacity > maxExact/4 {
		return shape{}, fmt.Errorf("%w: limit %q: capacity %d above 2^50", ErrRange, name, capacity)
	}
	if rate.Tokens() == 0 {
		s.fill()
		return s, nil
	}
	limit := big.NewInt(maxExact)
	for _, u := range units {
		// num/den = tokens per unit = tokens * u * 1000 / period(ns).
		num := new(big.Int).Mul(big.NewInt(rate.Tokens()), big.NewInt(u*1000))
		den := big.NewInt(int64(rate.Period()))
		g := new(big.Int).GCD(nil, nil, num, den)
		num.Quo(num, g)
		den.Quo(den, g)
		// gap = 2*capacity*den + den + num bounds need, deficit and rem+num*e.
		gap := new(big.Int).Mul(big.NewInt(2*capacity), den)
		gap.Add(gap, den).Add(gap, num)
		if gap.Cmp(limit) <= 0 {
			s.num, s.den, s.unit = num.Int64(), den.Int64(), u
			s.fill()
			return s, nil
		}
	}
	return shape{}, fmt.Errorf("%w: limit %q: capacity %d at %v needs integers above 2^52 even counting time in seconds; lower the capacity or use a rate whose period divides more evenly",
		ErrRange, name, capacity, rate)
}

func (s *shape) fill() {
	s.args = [4]string{strconv.FormatInt(s.capacity, 10), strconv.FormatInt(s.num, 10),
		strconv.FormatInt(s.den, 10), strconv.FormatInt(s.unit, 10)}
}

// Granularity returns the time unit the limit is counted in on the server.
func (s *shape) granularity() time.Duration { return time.Duration(s.unit) * time.Microsecond }

// refill returns the µs, counted in whole units as the script counts them,
// until the limit refills need parts of a token (den to a token); num
// must be above 0. Values below 2^52: the products fit an int64.
func (s *shape) refill(need int64) int64 { return (need + s.num - 1) / s.num * s.unit }

// value is a level as a float, for reporting.
func (s *shape) value(tok, rem int64) float64 {
	return float64(tok) + float64(rem)/float64(s.den)
}
