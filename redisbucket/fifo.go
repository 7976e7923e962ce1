package redisbucket

import (
	"context"
	"slices"
	"sync"
)

// fifo is a lock with a first-come first-served queue: one holder (the
// head of the local waiters, the only one that calls Redis and sleeps on a
// timer) and the others parked on their own channel, woken one per release.
type fifo struct {
	mu    sync.Mutex
	busy  bool
	queue []chan struct{}
}

// acquire takes the lock, waiting in line; it fails with ctx's error,
// leaving the line, when ctx ends first.
func (q *fifo) acquire(ctx context.Context) error {
	q.mu.Lock()
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	q.queue = append(q.queue, ch)
	q.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		q.mu.Lock()
		if i := slices.Index(q.queue, ch); i >= 0 {
			q.queue = slices.Delete(q.queue, i, i+1)
			q.mu.Unlock()
			return ctx.Err()
		}
		q.mu.Unlock()
		// The lock was handed over as ctx ended: pass it on.
		q.release()
		return ctx.Err()
	}
}

// tryAcquire takes the lock if it is free and nobody waits.
func (q *fifo) tryAcquire() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.busy {
		return false
	}
	q.busy = true
	return true
}

// release hands the lock to the first in line, or frees it.
func (q *fifo) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue) == 0 {
		q.busy = false
		return
	}
	ch := q.queue[0]
	q.queue[0] = nil
	q.queue = q.queue[1:]
	close(ch)
}

// queued returns how many wait in line behind the holder.
func (q *fifo) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}
