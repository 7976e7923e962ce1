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
	b, clk := newFake(t, 1, Per(1, time.Second))
	g := b.g.Load()
	w := g.waiter()
	w.one[0], w.oneCost[0] = b, 1
	w.bs, w.costs = w.one[:], w.oneCost[:]
	w.Since, w.queued, w.Granted = 5, true, true
	w.Done = make(chan struct{}, 1)
	w.Timer = clk.NewTimer(time.Second)
	w.Armed = int64(time.Second)
	clk.Advance(time.Second) // the tick is in the channel
	w.Done <- struct{}{}
	done, timer := w.Done, w.Timer

	g.recycle(w)

	if w.Done != done || w.Timer != timer {
		t.Fatal("the channel or the timer was not kept")
	}
	select {
	case <-w.Done:
		t.Fatal("done still holds a value")
	case <-w.Timer.Chan():
		t.Fatal("the timer's channel still holds a tick")
	default:
	}
	if w.bs != nil || w.costs != nil || w.one[0] != nil || w.oneCost[0] != 0 ||
		w.Since != 0 || w.queued || w.Granted || w.Err != nil || w.Armed != 0 {
		t.Fatalf("recycled waiter keeps its last use: %+v", w)
	}
}
