package main

import (
	"strings"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
)

func TestParseLimit(t *testing.T) {
	tests := []struct {
		in         string
		rate       throttle.Rate
		capacity   int64
		perRequest bool
	}{
		{"requests=500/1m", throttle.Per(500, time.Minute), 500, true},
		{"tokens=200000/1m", throttle.Per(200000, time.Minute), 200000, false},
		{"tokens=2000000/24h,burst=100000", throttle.Per(2000000, 24*time.Hour), 100000, false},
		{"requests=5/1s,per=cost", throttle.Per(5, time.Second), 5, false},
		{"calls=5/1s,per=request", throttle.Per(5, time.Second), 5, true},
		{"r=0.5/1s,burst=1", throttle.Per(5, 10*time.Second), 1, false},
		{"r=2.5/1s,burst=3", throttle.Per(25, 10*time.Second), 3, false},
		{"r=1e3/1h", throttle.Per(1000, time.Hour), 1000, false},
		{"r=0/1s,burst=4", throttle.Per(0, time.Second), 4, false},
	}
	for _, tt := range tests {
		l, err := parseLimit(tt.in)
		if err != nil {
			t.Errorf("parseLimit(%q): %v", tt.in, err)
			continue
		}
		if l.rate != tt.rate || l.capacity != tt.capacity || l.perRequest != tt.perRequest {
			t.Errorf("parseLimit(%q) = %v burst %d perRequest %v; want %v burst %d perRequest %v",
				tt.in, l.rate, l.capacity, l.perRequest, tt.rate, tt.capacity, tt.perRequest)
		}
	}
	for _, bad := range []string{"", "=5/1s", "r", "r=", "r=x", "r=5/0s", "r=5/1s,burst=", "r=5/1s,burst=-1", "r=5/1s,per=", "a b=5/1s",
		"r=0.0000000000000000001/1s,burst=1", "r=1/1h,burst=1.5",
		"requests=5", "r=2.5,burst=3", "r=5/1s,burst=5,burst=1", "r=5/1s,per=cost,per=request"} {
		if _, err := parseLimit(bad); err == nil {
			t.Errorf("parseLimit(%q) accepted", bad)
		}
	}
}

func FuzzParseLimit(f *testing.F) {
	for _, s := range []string{"requests=500/1m", "tokens=200000/1m,burst=5000,per=cost", "r=0.5/1s,burst=1", "r=2.5", "r=1e3/h", "x=5/0s", "r=5/1s,size=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := parseLimit(s)
		if err != nil {
			return
		}
		// Whatever is accepted makes a bucket, and its name is what came
		// before the first '='.
		if _, err := throttle.New(l.capacity, l.rate); err != nil {
			t.Fatalf("parseLimit(%q) accepted %v burst %d: %v", s, l.rate, l.capacity, err)
		}
		if name, _, _ := strings.Cut(s, "="); name != l.name || l.name == "" {
			t.Fatalf("parseLimit(%q) named %q", s, l.name)
		}
		if l.rate.Tokens() < 0 || l.rate.Period() <= 0 || l.capacity < 1 {
			t.Fatalf("parseLimit(%q) = %v burst %d", s, l.rate, l.capacity)
		}
	})
}
