package throttle

import (
	"testing"
	"time"
)

// TestRecycleEmptiesWaiter leaves a waiter as a granted-then-cancelled
// Acquire does, with a value in done and a tick in its timer's channel:
// recycled, it keeps its channel and timer, with neither holding anything,
// and nothing else of its last use.
func TestRecycleEmptiesWaiter(t *testing.T) {
	b, clk := newFake(t, 1, Every(time.Second))
	g := b.g.Load()
	w := g.waiter()
	w.one[0], w.oneCost[0] = b, 1
	w.bs, w.costs = w.one[:], w.oneCost[:]
	w.since, w.queued, w.granted = 5, true, true
	w.done = make(chan struct{}, 1)
	w.timer = clk.NewTimer(time.Second)
	w.armed = int64(time.Second)
	clk.Advance(time.Second) // the tick is in the channel
	w.done <- struct{}{}
	done, timer := w.done, w.timer

	g.recycle(w)

	if w.done != done || w.timer != timer {
		t.Fatal("the channel or the timer was not kept")
	}
	select {
	case <-w.done:
		t.Fatal("done still holds a value")
	case <-w.timer.Chan():
		t.Fatal("the timer's channel still holds a tick")
	default:
	}
	if w.bs != nil || w.costs != nil || w.one[0] != nil || w.oneCost[0] != 0 ||
		w.since != 0 || w.queued || w.granted || w.err != nil || w.armed != 0 {
		t.Fatalf("recycled waiter keeps its last use: %+v", w)
	}
}
