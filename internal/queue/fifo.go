package queue

import (
	"sync"
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

// Put keeps w, emptied for its next use (Wake.Reuse), for Get.
func (p *Pool[W]) Put(w *W) { p.p.Put(w) }

// Links are a queued node's neighbours in its fifo.
type Links[N any] struct{ Prev, Next *N }

// Node is what a fifo holds: a pointer to a node with links.
type Node[N any] interface {
	*N
	Linked() *Links[N]
}

// Fifo is a doubly linked queue: the one list of waiters of both queues, a
// group's (of waiters) and each class's (of entries). Len counts the
// nodes queued, for a waiter's place in the queue and a status page.
type Fifo[N any, P Node[N]] struct {
	Head, Last P
	Len        int
}

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
	q.Len++
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
	q.Len++
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
	q.Len--
}
