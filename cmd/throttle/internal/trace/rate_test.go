package trace

import (
	"errors"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in     string
		tokens string
		period time.Duration
		err    error
	}{
		{"1", "1", time.Second, nil},
		{"0.1", "0.1", time.Second, nil},
		{"0", "0", time.Second, nil},
		{"90000/1m", "90000", time.Minute, nil},
		{"500/m", "500", time.Minute, nil},
		{"10/1.5s", "10", 1500 * time.Millisecond, nil},
		{"0.5/1s", "0.5", time.Second, nil},
		{"3/1h30m", "3", 90 * time.Minute, nil},
		{"1/250ms", "1", 250 * time.Millisecond, nil},
		{"1/µs", "1", time.Microsecond, nil},
		{"1/1us", "1", time.Microsecond, nil},
		{"7/2ns", "7", 2, nil},
		{"5/0s", "", 0, ErrPeriod},
		{"5/0", "", 0, ErrPeriod},
		{"5/", "", 0, ErrPeriod},
		{"5/-1s", "", 0, ErrPeriod},
		{"5/1", "", 0, ErrPeriod},
		{"5/1x", "", 0, ErrPeriod},
		{"5/s/s", "", 0, ErrPeriod},
		{"5/1.5ns", "", 0, ErrTooFine},
		{"5/1e3s", "", 0, ErrPeriod},
		{"5/300y", "", 0, ErrPeriod},
		{"5/3000000h", "", 0, ErrRange},
		{"-1", "", 0, ErrNegative},
		{"-1/1s", "", 0, ErrNegative},
		{"abc", "", 0, ErrSyntax},
		{"", "", 0, ErrSyntax},
		{"/1s", "", 0, ErrSyntax},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if !errors.Is(err, tt.err) || (tt.err != nil) != (err != nil) {
			t.Errorf("ParseRate(%q) error = %v, want %v", tt.in, err, tt.err)
			continue
		}
		if err != nil {
			continue
		}
		if got.Tokens.String() != tt.tokens || got.Period != tt.period {
			t.Errorf("ParseRate(%q) = %v, want %s/%v", tt.in, got, tt.tokens, tt.period)
		}
	}
}

func TestParseDurationMatchesTime(t *testing.T) {
	for _, s := range []string{"1s", "1.5s", "1h30m", "2h45m30.5s", "250ms", "1us", "1µs", "7ns", "0.001s", "1m0s", "9m0.000000001s"} {
		got, err := ParseDuration(s)
		want, werr := time.ParseDuration(s)
		if err != nil || werr != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; time.ParseDuration = %v, %v", s, got, err, want, werr)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"1", "0.1", "90000/1m", "500/m", "10/1.5s", "5/0s", "1/1h30m", "-1", "1/1.5ns", "2e3/1µs", "1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		if r.Period <= 0 {
			t.Fatalf("ParseRate(%q) period %v", s, r.Period)
		}
		// Whatever we accept, time.ParseDuration reads the same, unless it
		// truncated a sub-nanosecond part we would have refused, or ours
		// was a bare unit.
		_, per, found := cutSlash(s)
		if !found {
			if r.Period != time.Second {
				t.Fatalf("ParseRate(%q) period %v without a slash", s, r.Period)
			}
			return
		}
		if per[0] >= '0' && per[0] <= '9' || per[0] == '.' {
			if d, err := time.ParseDuration(per); err != nil || d != r.Period {
				t.Fatalf("ParseRate(%q) period %v; time.ParseDuration(%q) = %v, %v", s, r.Period, per, d, err)
			}
		}
		// The formatted rate parses back to the same value.
		r2, err := ParseRate(r.String())
		if err != nil || r2 != r {
			t.Fatalf("ParseRate(%q.String() = %q) = %v, %v", s, r.String(), r2, err)
		}
	})
}

func cutSlash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
