package hoststore

import (
	"context"
	"sort"
	"time"

	"github.com/throttlekit/throttle/budget"
)

// Store is a budget.Store: a budget's spend kept in the file, shared by
// the host's processes and kept across their restarts.
var _ budget.Store = (*Store)(nil)

// A budget's record: a is the start of its window (Unix nanoseconds), b
// its spend in that window.

// window brings r to the window starting at w: a later window starts
// afresh; ok is false for an earlier one, whose account is closed.
func window(r *record, w time.Time) (ok bool) {
	ns := w.UnixNano()
	switch {
	case r.a < ns:
		r.a, r.b = ns, 0
	case r.a > ns:
		return false
	}
	return true
}

// Reserve implements budget.Store.
func (s *Store) Reserve(_ context.Context, key string, w time.Time, cost, limit int64) (spent int64, ok bool, err error) {
	err = s.update(key, kindBudget, func(r *record) (bool, error) {
		if !window(r, w) {
			return false, nil
		}
		spent = r.b
		if cost > limit-r.b {
			return false, nil
		}
		r.b += cost
		spent, ok = r.b, true
		return true, nil
	})
	return spent, ok, err
}

// Adjust implements budget.Store.
func (s *Store) Adjust(_ context.Context, key string, w time.Time, delta int64) (spent int64, err error) {
	err = s.update(key, kindBudget, func(r *record) (bool, error) {
		if !window(r, w) {
			return false, nil
		}
		r.b = max(0, r.b+delta)
		spent = r.b
		return true, nil
	})
	return spent, err
}

// Spent implements budget.Store.
func (s *Store) Spent(_ context.Context, key string, w time.Time) (spent int64, err error) {
	err = s.update(key, kindBudget, func(r *record) (bool, error) {
		if r.a == w.UnixNano() {
			spent = r.b
		}
		return false, nil
	})
	return spent, err
}

// Entries implements budget.Store.
func (s *Store) Entries(context.Context) ([]budget.Entry, error) {
	rs, err := s.records(kindBudget)
	if err != nil {
		return nil, err
	}
	out := make([]budget.Entry, 0, len(rs))
	for _, r := range rs {
		out = append(out, budget.Entry{Key: r.key, Window: time.Unix(0, r.a), Spent: r.b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Reset implements budget.Store: key's spend starts again from zero.
func (s *Store) Reset(_ context.Context, key string) error {
	return s.update(key, kindBudget, func(r *record) (bool, error) {
		r.a, r.b = 0, 0
		return true, nil
	})
}
