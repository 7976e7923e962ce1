package ledger

import (
	"sync"

	"github.com/throttlekit/throttle"
)

// Flights counts, for each limit of a Gate, what the calls in flight
// reserved and have not settled: at most what they can give back.
type Flights struct {
	mu sync.Mutex
	m  map[Ref]int64
}

// Add books costs taken from g for a call about to be sent.
func (f *Flights) Add(g throttle.Gate, costs []int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = make(map[Ref]int64)
	}
	for i, c := range costs {
		if c != 0 {
			f.m[Ref{g, i}] += c
		}
	}
}

// Settled removes a call booked with costs. A limit with nothing left in
// flight is forgotten.
func (f *Flights) Settled(g throttle.Gate, costs []int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range costs {
		r := Ref{g, i}
		if n, ok := f.m[r]; ok && c != 0 {
			if n -= c; n > 0 {
				f.m[r] = n
			} else {
				delete(f.m, r)
			}
		}
	}
}

// Idle reports whether no call on the n limits of g is in flight.
func (f *Flights) Idle(g throttle.Gate, n int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range n {
		if len(f.m) == 0 {
			break
		}
		if f.m[Ref{g, i}] > 0 {
			return false
		}
	}
	return true
}

// Unsettled is what the calls in flight on limit r reserved and have not
// settled.
func (f *Flights) Unsettled(r Ref) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(f.m[r], 0)
}
