package main

import (
	"math/bits"
	"time"
)

// histSubBits sets the histogram's precision: 2^histSubBits values are
// kept exactly, and above them every power of two is split into
// 2^(histSubBits-1) buckets, so a bucket is less than 1/512 (0.2%) of its
// values wide.
const histSubBits = 10

// histSize is the number of buckets: the exact ones, then one row of
// 2^(histSubBits-1) for each shift from 1 to 64-histSubBits.
const histSize = 1<<histSubBits + (64-histSubBits)*(1<<(histSubBits-1))

// hist is a log-linear (HDR-style) histogram of non-negative durations in a
// fixed 230 KB, whatever the number of values: what lets simulate report
// percentiles of a trace of any length. The count of values and the maximum
// are exact; a percentile is the upper edge of its bucket, capped at the
// maximum, so it is never understated and overstated by less than 0.2%.
type hist struct {
	counts [histSize]uint64
	n      uint64
	max    time.Duration
}

// histIndex returns the bucket of v.
func histIndex(v uint64) int {
	if v < 1<<histSubBits {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits
	// v>>shift is in [2^(histSubBits-1), 2^histSubBits).
	return shift<<(histSubBits-1) + int(v>>shift)
}

// histUpper returns the largest value of bucket i.
func histUpper(i int) uint64 {
	if i < 1<<histSubBits {
		return uint64(i)
	}
	row := i >> (histSubBits - 1) // shift + 1
	shift := row - 1
	m := uint64(i - shift<<(histSubBits-1))
	return (m+1)<<shift - 1
}

// record adds d, which must not be negative.
func (h *hist) record(d time.Duration) {
	h.counts[histIndex(uint64(d))]++
	h.n++
	h.max = max(h.max, d)
}

// percentile returns the nearest-rank p-th percentile for p in (0, 100]:
// the smallest recorded value (to the bucket's precision) that at least p%
// of the values do not exceed. It returns 0 when nothing was recorded.
func (h *hist) percentile(p uint64) time.Duration {
	if h.n == 0 {
		return 0
	}
	// rank = ceil(p*n/100), computed without overflow.
	hi, lo := bits.Mul64(p, h.n)
	q, r := bits.Div64(hi, lo, 100)
	if r != 0 {
		q++
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= q {
			return min(time.Duration(histUpper(i)), h.max)
		}
	}
	return h.max
}
