package redisbucket

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
)

// TestCallCtx checks the call deadlines without a server: a call made
// with context.Background gets a deadline no earlier than its start plus
// the call timeout and no later than that plus the window; a caller's
// context keeps its values, its cancellation and a deadline of its own.
func TestCallCtx(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	s, err := newShape("", 10, throttle.Per(10, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 75 * time.Millisecond
	e, err := newEngine(c, "x", []shape{s}, []Option{WithCallTimeout(timeout), WithFailurePolicy(FailClosed)})
	if err != nil {
		t.Fatal(err)
	}
	w := deadlineWindow(timeout)
	if w != time.Millisecond {
		t.Fatalf("window %v, want 1ms", w)
	}
	shared := map[context.Context]bool{}
	for range 2000 {
		start := time.Now()
		ctx, cancel := e.callCtx(context.Background())
		end := time.Now()
		dl, ok := ctx.Deadline()
		if !ok || dl.Before(start.Add(timeout)) || dl.After(end.Add(timeout+w)) {
			t.Fatalf("deadline %v after the call's start, want within [%v, %v]", dl.Sub(start), timeout, end.Sub(start)+timeout+w)
		}
		shared[ctx] = true
		cancel()
	}
	if len(shared) == 2000 {
		t.Errorf("no two calls shared a deadline")
	}
	if deadlineWindow(8*time.Millisecond) != 500*time.Microsecond {
		t.Errorf("window of an 8 ms timeout: %v, want 500µs", deadlineWindow(8*time.Millisecond))
	}

	type key struct{}
	parent, stop := context.WithCancel(context.WithValue(context.Background(), key{}, 7))
	ctx, cancel := e.callCtx(parent)
	defer cancel()
	if ctx.Value(key{}) != 7 {
		t.Errorf("the caller's values are lost")
	}
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > timeout {
		t.Errorf("caller's call deadline %v away, want at most %v", time.Until(dl), timeout)
	}
	stop()
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		t.Fatal("the caller's cancellation does not reach the call")
	}
}
