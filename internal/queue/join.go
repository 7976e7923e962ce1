package queue

import (
	"cmp"
	"fmt"
	"slices"
	"unsafe"
)

// CheckJoin checks what NewLimiter or htb.NewLimiter (fn) is given to
// join: at least one item (what names one), none nil, and none that clash
// says cannot go with one before it (i is its index).
func CheckJoin[T any](fn, what string, items []*T, clash func(i int, earlier, it *T) error) error {
	if len(items) == 0 {
		return fmt.Errorf("throttle: %s needs at least one %s", fn, what)
	}
	for i, it := range items {
		if it == nil {
			return fmt.Errorf("throttle: %s: %s %d is nil", fn, what, i)
		}
		for _, o := range items[:i] {
			if err := clash(i, o, it); err != nil {
				return err
			}
		}
	}
	return nil
}

// Queue is a queue of either kind, a group of buckets or a domain of
// classes, as Join and Lock see it.
type Queue interface {
	comparable
	Line() *Timeline
}

// Join puts the queues that items are in into one, for NewLimiter
// and htb.NewLimiter: it locks every queue involved in address order, so
// that concurrent joins cannot deadlock, and, once every item is still in
// one of them (none was joined elsewhere meanwhile) and they share a
// clock, calls merge with them, to merge into the first. clocks is the
// error for queues on different clocks.
func Join[I any, Q Queue](items []I, queueOf func(I) Q, clocks error, merge func(qs []Q) error) error {
	for {
		var qs []Q
		for _, it := range items {
			if q := queueOf(it); !slices.Contains(qs, q) {
				qs = append(qs, q)
			}
		}
		slices.SortFunc(qs, func(a, b Q) int {
			return cmp.Compare(uintptr(unsafe.Pointer(a.Line())), uintptr(unsafe.Pointer(b.Line())))
		})
		for _, q := range qs {
			q.Line().Mu.Lock()
		}
		stale := false
		for _, it := range items {
			stale = stale || !slices.Contains(qs, queueOf(it))
		}
		var err error
		if !stale {
			for _, o := range qs[1:] {
				if o.Line().Clock != qs[0].Line().Clock {
					err = clocks
				}
			}
			if err == nil {
				err = merge(qs)
			}
		}
		for _, q := range qs {
			q.Line().Mu.Unlock()
		}
		if !stale {
			return err
		}
	}
}
