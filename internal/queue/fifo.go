package queue

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Pool keeps waiters done with for reuse, a group's and a domain's.
type Pool[W any] struct{ p sync.Pool }

// Get returns a waiter used before, or a new one.
func (p *Pool[W]) Get() *W {
	if w, ok := p.p.Get().(*W); ok {
		return w
	}
	return new(W)
}

// Put keeps w, emptied by recycle, for get.
func (p *Pool[W]) Put(w *W) { p.p.Put(w) }

// Links are a queued node's neighbours in its fifo.
type Links[N any] struct{ Prev, Next *N }

// Node is what a fifo holds: a pointer to a node with links.
type Node[N any] interface {
	*N
	Linked() *Links[N]
}

// Fifo is a doubly linked queue: the one list of waiters of both queues, a
// group's (of waiters) and each class's (of entries).
type Fifo[N any, P Node[N]] struct{ Head, Last P }

// PushBack queues n last.
func (q *Fifo[N, P]) PushBack(n P) {
	l := n.Linked()
	l.Prev, l.Next = (*N)(q.Last), nil
	if q.Last == nil {
		q.Head = n
	} else {
		q.Last.Linked().Next = (*N)(n)
	}
	q.Last = n
}

// LinkBefore queues n just before at, which is queued.
func (q *Fifo[N, P]) LinkBefore(at, n P) {
	a, l := at.Linked(), n.Linked()
	l.Prev, l.Next = a.Prev, (*N)(at)
	if a.Prev == nil {
		q.Head = n
	} else {
		P(a.Prev).Linked().Next = (*N)(n)
	}
	a.Prev = (*N)(n)
}

// Unlink takes n out of the queue.
func (q *Fifo[N, P]) Unlink(n P) {
	l := n.Linked()
	if l.Prev == nil {
		q.Head = P(l.Next)
	} else {
		P(l.Prev).Linked().Next = l.Next
	}
	if l.Next == nil {
		q.Last = P(l.Prev)
	} else {
		P(l.Next).Linked().Prev = l.Prev
	}
	l.Prev, l.Next = nil, nil
}

// Queue is a queue of either kind, a group of buckets or a domain of
// classes, as joinQueues and lockQueue see it.
type Queue interface {
	comparable
	Line() *Timeline
}

// Join puts the queues that items are in into one, for NewLimiter
// and NewClassLimiter: it locks every queue involved in address order, so
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

// Lock locks the queue p points to and returns it. An item's queue
// changes when it is joined into another (by NewLimiter or
// NewClassLimiter), hence the check after locking.
func Lock[T any, Q interface {
	*T
	Queue
}](p *atomic.Pointer[T]) Q {
	for {
		q := Q(p.Load())
		q.Line().Mu.Lock()
		if Q(p.Load()) == q {
			return q
		}
		q.Line().Mu.Unlock()
	}
}
