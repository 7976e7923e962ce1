package ledger

import (
	"testing"

	"github.com/throttlekit/throttle"
)

// bounded is a Meter and Bounder of two limits of capacity 10 at the
// levels given, counting its Status reads.
type bounded struct {
	throttle.Gate
	bound, status [2]int64
	reads         int
}

func (b *bounded) StatusBound(dst []throttle.LimitStatus) []throttle.LimitStatus {
	return at(dst, b.bound)
}

func (b *bounded) Status(dst []throttle.LimitStatus) []throttle.LimitStatus {
	b.reads++
	return at(dst, b.status)
}

func at(dst []throttle.LimitStatus, lv [2]int64) []throttle.LimitStatus {
	for _, r := range lv {
		dst = append(dst, throttle.LimitStatus{Capacity: 10, Remaining: r})
	}
	return dst
}

// TestFullReadsStatusOnlyWhereTheBoundCouldBeFull: Full reads a Bounder's
// Status only when its bound shows a limit the call takes from at its
// capacity, and then answers from Status, which the bound may overstate.
func TestFullReadsStatusOnlyWhereTheBoundCouldBeFull(t *testing.T) {
	for _, c := range []struct {
		name          string
		bound, status [2]int64
		costs         []int64
		want          uint64
		reads         int
	}{
		{"below capacity by the bound", [2]int64{9, 3}, [2]int64{9, 3}, []int64{1, 1}, 0, 0},
		{"full by the bound on a limit not taken", [2]int64{9, 10}, [2]int64{9, 10}, []int64{1, 0}, 0, 0},
		{"full by the bound, full by Status", [2]int64{10, 3}, [2]int64{10, 2}, []int64{1, 1}, 1, 1},
		{"full by the bound, not by Status", [2]int64{10, 10}, [2]int64{7, 10}, []int64{1, 1}, 2, 1},
	} {
		g := &bounded{bound: c.bound, status: c.status}
		if got := Full(g, c.costs); got != c.want || g.reads != c.reads {
			t.Errorf("%s: Full = %b with %d Status reads, want %b with %d", c.name, got, g.reads, c.want, c.reads)
		}
	}
}
