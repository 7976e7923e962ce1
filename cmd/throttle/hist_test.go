package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistIndexEdges(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 1023, 1024, 1025, 2047, 2048, 4095, 4096, 1 << 40, 1<<63 - 1, 1<<64 - 1} {
		i := histIndex(v)
		if i < prev || i >= histSize {
			t.Errorf("histIndex(%d) = %d after %d (size %d)", v, i, prev, histSize)
		}
		prev = i
		if up := histUpper(i); up < v {
			t.Errorf("histUpper(histIndex(%d)) = %d, below the value", v, up)
		}
		if i > 0 {
			if low := histUpper(i-1) + 1; low > v {
				t.Errorf("bucket %d starts at %d, above %d", i, low, v)
			}
		}
	}
	// Buckets tile the values: each starts right after the previous one.
	for i := 1; i < histSize; i++ {
		if histIndex(histUpper(i-1)+1) != i || histIndex(histUpper(i)) != i {
			t.Fatalf("bucket %d: [%d, %d] does not map back", i, histUpper(i-1)+1, histUpper(i))
		}
	}
}

// TestHistPercentiles checks the histogram against exact nearest-rank
// percentiles of random data: never below, at most 0.2% above.
func TestHistPercentiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		n := 1 + r.IntN(5000)
		var h hist
		vals := make([]time.Duration, n)
		for i := range vals {
			switch trial % 3 {
			case 0:
				vals[i] = time.Duration(r.Int64N(2000))
			case 1:
				vals[i] = time.Duration(r.ExpFloat64() * float64(time.Second))
			default:
				if r.IntN(2) == 0 {
					vals[i] = 0
				} else {
					vals[i] = time.Duration(r.Int64N(int64(time.Hour)))
				}
			}
			h.record(vals[i])
		}
		slices.Sort(vals)
		for _, p := range []uint64{1, 50, 95, 99, 100} {
			rank := (int(p)*n + 99) / 100
			want := vals[rank-1]
			got := h.percentile(p)
			if got < want || float64(got-want) > float64(want)/512+1 {
				t.Errorf("trial %d, n %d: p%d = %v, exact %v", trial, n, p, got, want)
			}
		}
		if h.max != vals[n-1] || h.percentile(100) != vals[n-1] {
			t.Errorf("max %v, p100 %v, want %v", h.max, h.percentile(100), vals[n-1])
		}
	}
	var empty hist
	if empty.percentile(50) != 0 {
		t.Error("empty histogram percentile not 0")
	}
}
