// Package queue is the machinery of a FIFO queue of waiters that the
// core's buckets and the classes of package htb share: the time line (the
// lock, the clock and instant 0), a waiter's wake (its channel and timer,
// and the one loop that sleeps, is served or cancels), the linked list,
// the pool of idle waiters, and the joining and locking of queues.
package queue
