package trace

import (
	"errors"
	"math"
	"strings"
	"time"
)

// ErrPeriod is returned for a rate whose period is missing, zero, negative
// or malformed.
var ErrPeriod = errors.New("period must be a positive duration such as 1s, 1m or 1h")

// Rate is a refill rate as written: Tokens added evenly over each Period.
// Tokens may have a fractional part.
type Rate struct {
	Tokens Decimal
	Period time.Duration
}

// ParseRate parses a rate: a decimal number of tokens per second ("2",
// "0.1"), or "N/DURATION" with N a decimal and DURATION as accepted by
// time.ParseDuration ("90000/1m", "0.5/1s", "10/1.5s"). A bare unit stands
// for one of it: "500/m" is "500/1m". Zero tokens is a valid rate that never
// refills; a zero or negative period is ErrPeriod.
func ParseRate(s string) (Rate, error) {
	num, per, found := strings.Cut(s, "/")
	tokens, err := ParseDecimal(num)
	if err != nil {
		return Rate{}, err
	}
	if !found {
		return Rate{Tokens: tokens, Period: time.Second}, nil
	}
	p, err := parsePeriod(per)
	if err != nil {
		return Rate{}, err
	}
	return Rate{Tokens: tokens, Period: p}, nil
}

func parsePeriod(s string) (time.Duration, error) {
	if s == "" {
		return 0, ErrPeriod
	}
	if c := s[0]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == 0xc2 || c == 0xce {
		// A bare unit ("m", "µs") stands for one of it.
		s = "1" + s
	}
	d, err := ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, ErrPeriod
	}
	return d, nil
}

// units maps a duration unit to its length as 10^pow × mul nanoseconds.
var units = map[string]struct {
	pow int
	mul int64
}{
	"ns": {0, 1},
	"us": {3, 1}, "µs": {3, 1}, "μs": {3, 1},
	"ms": {6, 1},
	"s":  {9, 1},
	"m":  {9, 60},
	"h":  {9, 3600},
}

// ParseDuration parses a non-negative duration in the syntax of
// time.ParseDuration ("1m", "1.5s", "1h30m", "250ms"), but exactly: a value
// that is not a whole number of nanoseconds is ErrTooFine rather than
// truncated, and one beyond the range of time.Duration is ErrRange. Signs
// are rejected with ErrPeriod; "0" alone is accepted.
func ParseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	if s == "" {
		return 0, ErrPeriod
	}
	var total int64
	for s != "" {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		j := i
		for j < len(s) && !(s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
			j++
		}
		if i == 0 {
			return 0, ErrPeriod
		}
		u, ok := units[s[i:j]]
		if !ok {
			return 0, ErrPeriod
		}
		d, err := ParseDecimal(s[:i])
		if err != nil {
			return 0, err
		}
		v, err := d.Scaled(u.pow)
		if errors.Is(err, ErrNotWhole) {
			return 0, ErrTooFine
		}
		if err != nil {
			return 0, err
		}
		if v > math.MaxInt64/u.mul {
			return 0, ErrRange
		}
		v *= u.mul
		if total > math.MaxInt64-v {
			return 0, ErrRange
		}
		total += v
		s = s[j:]
	}
	return time.Duration(total), nil
}

// String formats r as "N/DURATION", for example "90000/1m0s".
func (r Rate) String() string {
	return r.Tokens.String() + "/" + r.Period.String()
}
