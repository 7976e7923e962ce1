package throttle

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestPriorityOrder queues waiters of three priorities on a bucket that
// grants one token a second: higher first, FIFO within a priority, each at
// its exact instant.
func TestPriorityOrder(t *testing.T) {
	b, clk := newFake(t, 1, Per(1, time.Second))
	b.TryAcquire(1)
	out := make(chan result, 10)
	var wg sync.WaitGroup
	batch := WithPriority(t.Context(), -1)
	high := WithPriority(t.Context(), 5)
	start(t, b, clk, batch, 0, 1, out, &wg)
	start(t, b, clk, t.Context(), 1, 1, out, &wg)
	start(t, b, clk, batch, 2, 1, out, &wg)
	start(t, b, clk, high, 3, 1, out, &wg)
	start(t, b, clk, t.Context(), 4, 1, out, &wg)
	start(t, b, clk, high, 5, 1, out, &wg)
	if priorityOf(high) != 5 || priorityOf(t.Context()) != 0 {
		t.Fatal("PriorityOf")
	}
	for i, want := range []int{3, 5, 1, 4, 0, 2} {
		clk.BlockUntilContext(t.Context(), 1)
		clk.Advance(time.Second)
		r := <-out
		if r.err != nil || r.id != want || r.at != time.Duration(i+1)*time.Second {
			t.Fatalf("grant %d: %+v, want waiter %d at %ds", i, r, want, i+1)
		}
	}
	wg.Wait()
}

// TestPriorityNeverStarves holds the stated bound: a waiter is served
// after at most maxOvertake waiters that queued after it.
func TestPriorityNeverStarves(t *testing.T) {
	b, clk := newFake(t, 1, Per(1, time.Second))
	b.TryAcquire(1)
	n := maxOvertake + 4
	out := make(chan result, n+1)
	var wg sync.WaitGroup
	start(t, b, clk, WithPriority(t.Context(), -1), -1, 1, out, &wg)
	for i := range n {
		start(t, b, clk, WithPriority(t.Context(), 1), i, 1, out, &wg)
	}
	var order []int
	for range n + 1 {
		clk.BlockUntilContext(t.Context(), 1)
		clk.Advance(time.Second)
		order = append(order, (<-out).id)
	}
	wg.Wait()
	for i, id := range order {
		want := i
		switch {
		case i == maxOvertake:
			want = -1
		case i > maxOvertake:
			want = i - 1
		}
		if id != want {
			t.Fatalf("order %v: the batch waiter must come after exactly %d others", order, maxOvertake)
		}
	}
}

// TestPriorityDeadline: a deadline is judged for the place the waiter
// takes, not the end of the queue; the waiters it passes are re-timed.
func TestPriorityDeadline(t *testing.T) {
	b, clk := newFake(t, 10, Per(10, time.Second)) // a token every 100ms
	b.TryAcquire(10)
	out := make(chan result, 4)
	var wg sync.WaitGroup
	start(t, b, clk, t.Context(), 0, 10, out, &wg) // 1s
	// At priority 0 a cost of 5 would wait 1.5s: fail fast on 600ms.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var we *WaitError
	err := b.Acquire(fixedDeadline{ctx, clk.Now().Add(600 * time.Millisecond)}, 5)
	if !errors.As(err, &we) || we.Wait != 1500*time.Millisecond {
		t.Fatalf("priority 0: %v", err)
	}
	// At priority 1 it goes first: 500ms fits.
	hi := fixedDeadline{WithPriority(ctx, 1), clk.Now().Add(600 * time.Millisecond)}
	start(t, b, clk, hi, 1, 5, out, &wg)
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(500 * time.Millisecond)
	if r := <-out; r.id != 1 || r.err != nil || r.at != 500*time.Millisecond {
		t.Fatalf("high: %+v", r)
	}
	// The waiter it passed is served at 1.5s, not 1s.
	clk.BlockUntilContext(t.Context(), 1)
	clk.Advance(999 * time.Millisecond)
	select {
	case r := <-out:
		t.Fatalf("passed waiter served early: %+v", r)
	default:
	}
	clk.Advance(time.Millisecond)
	if r := <-out; r.id != 0 || r.err != nil || r.at != 1500*time.Millisecond {
		t.Fatalf("passed waiter: %+v", r)
	}
	wg.Wait()
}
