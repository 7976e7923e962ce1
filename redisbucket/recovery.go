package redisbucket

import (
	"strconv"
	"sync"
)

// seen is what one process knows of its limiter that Redis may lose: the
// levels it last saw (for a key that vanished in a restart, a failover to
// a replica that had not caught up, or an eviction, which the script
// rebuilds no fuller than that view, refilled since) and the tokens its
// failure policy granted while Redis was away (charged to Redis by the
// first call that reaches it again, so that a fleet coming back from its
// local shares does not spend the quota twice).
type seen struct {
	mu    sync.Mutex
	hint  string  // "t tok_1 ... tok_n", or "" before the first reply
	owed  []int64 // granted without Redis since the last call that reached it
	owing bool
}

// get returns the view and the charge to send, and the owed amounts the
// charge stands for.
func (s *seen) get() (hint, charge string, owed []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.owing {
		return s.hint, "", nil
	}
	owed = append([]int64(nil), s.owed...)
	buf := make([]byte, 0, 8*len(owed))
	for i, c := range owed {
		if i > 0 {
			buf = append(buf, ' ')
		}
		buf = strconv.AppendInt(buf, c, 10)
	}
	return s.hint, string(buf), owed
}

// set records a reply's levels at server time now, and that the charge
// sent with it (paid) was applied.
func (s *seen) set(now int64, levels []int64, paid []int64) {
	buf := make([]byte, 0, 16+12*len(levels)/2)
	buf = strconv.AppendInt(buf, now, 10)
	for i := 0; i < len(levels); i += 2 {
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, levels[i], 10)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hint = string(buf)
	if paid != nil {
		s.owing = false
		for i, c := range paid {
			s.owed[i] -= c
			s.owing = s.owing || s.owed[i] > 0
		}
	}
}

// level returns the whole tokens of limit i in the last view, and whether
// there is one.
func (s *seen) level(i int) (int64, bool) {
	s.mu.Lock()
	h := s.hint
	s.mu.Unlock()
	if h == "" {
		return 0, false
	}
	f := 0
	start := 0
	for j := 0; j <= len(h); j++ {
		if j == len(h) || h[j] == ' ' {
			if f == i+1 {
				v, err := strconv.ParseInt(h[start:j], 10, 64)
				return v, err == nil
			}
			f++
			start = j + 1
		}
	}
	return 0, false
}

// spent records tokens the failure policy granted (or, negative, took
// back at a local settlement).
func (s *seen) spent(costs []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owed == nil {
		s.owed = make([]int64, len(costs))
	}
	s.owing = false
	for i, c := range costs {
		s.owed[i] = max(s.owed[i]+c, 0)
		s.owing = s.owing || s.owed[i] > 0
	}
}
