package grpcthrottle

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
)

// entered reports whether enter lets a call through now, without waiting.
func entered(t *testing.T, s *slowStart, g throttle.Gate, costs ...int64) bool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a call that would wait returns at once
	return s.enter(ctx, g, costs) == nil
}

// TestSlowStartConfirmsTheBurst: of a Gate of burst 10, 5 calls go at
// once; each success lets half of the unconfirmed rest follow; a call the
// Gate refused gives its place back; the first refusal lets everything
// through.
func TestSlowStartConfirmsTheBurst(t *testing.T) {
	clk := clockwork.NewFakeClock()
	b, err := throttle.New(20, throttle.Per(40, time.Second), throttle.WithClock(clk), throttle.WithName("calls"))
	if err != nil {
		t.Fatal(err)
	}
	g, _ := throttle.NewLimiter(b)
	var s slowStart
	for i := range 5 {
		if !entered(t, &s, g, 2) { // 20 tokens at 2 a call: a burst of 10
			t.Fatalf("call %d held; want half the burst, 5, at once", i)
		}
	}
	if entered(t, &s, g, 2) {
		t.Fatal("a 6th call went before any answer")
	}
	s.heard(true) // 1 confirmed: 1 + half of 9 rounded up = 6
	if !entered(t, &s, g, 2) || entered(t, &s, g, 2) {
		t.Fatal("after one success, want exactly one more call")
	}
	s.leave() // the 6th was refused by its Gate: its place is free
	if !entered(t, &s, g, 2) || entered(t, &s, g, 2) {
		t.Fatal("a place given back was not taken again")
	}
	for range 4 {
		s.heard(true) // 5 confirmed: 5 + half of 5 = 8
	}
	if !entered(t, &s, g, 2) || !entered(t, &s, g, 2) || entered(t, &s, g, 2) {
		t.Fatal("after 5 successes, want 8 calls let through")
	}
	s.heard(false)
	for range 20 {
		if !entered(t, &s, g, 2) {
			t.Fatal("a call held after a refusal ended the slow start")
		}
	}
}

// TestSlowStartEndsWithTheBurstConfirmed: successes up to all but one of
// the burst end it; a burst of 2 or fewer calls is never held.
func TestSlowStartEndsWithTheBurstConfirmed(t *testing.T) {
	clk := clockwork.NewFakeClock()
	small, _ := throttle.New(2, throttle.Per(1, time.Second), throttle.WithClock(clk))
	gs, _ := throttle.NewLimiter(small)
	var s slowStart
	for range 5 {
		if !entered(t, &s, gs, 1) {
			t.Fatal("a burst of 2 held")
		}
	}
	big, _ := throttle.New(4, throttle.Per(1, time.Second), throttle.WithClock(clk))
	gb, _ := throttle.NewLimiter(big)
	var s2 slowStart
	if !entered(t, &s2, gb, 1) || !entered(t, &s2, gb, 1) || entered(t, &s2, gb, 1) {
		t.Fatal("a burst of 4: want 2 at once")
	}
	s2.heard(true)
	s2.heard(true)
	s2.heard(true) // 3 of 4 confirmed
	if !s2.done.Load() {
		t.Fatal("still holding with all but one of the burst confirmed")
	}
}

// TestSlowStartWaiterWakes: a call held waits for the answer that lets it
// go, or its context.
func TestSlowStartWaiterWakes(t *testing.T) {
	clk := clockwork.NewFakeClock()
	b, _ := throttle.New(4, throttle.Per(1, time.Second), throttle.WithClock(clk))
	g, _ := throttle.NewLimiter(b)
	var s slowStart
	entered(t, &s, g, 1)
	entered(t, &s, g, 1)
	done := make(chan error)
	go func() { done <- s.enter(context.Background(), g, []int64{1}) }()
	select {
	case err := <-done:
		t.Fatalf("a held call returned %v before any answer", err)
	default:
	}
	s.heard(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- s.enter(ctx, g, []int64{1}) }()
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("a held call whose context ended returned %v", err)
	}
}

// TestWithoutSlowStart: the option lets a client's first calls go as its
// Gates allow.
func TestWithoutSlowStart(t *testing.T) {
	if cl := NewClient(nil, WithoutSlowStart()); !cl.c.slow.done.Load() {
		t.Fatal("WithoutSlowStart left the slow start on")
	}
	if cl := NewClient(nil); cl.c.slow.done.Load() {
		t.Fatal("a client starts without its slow start")
	}
}

// TestSlowStartBounded: a burst too large to send at once ends the slow
// start after maxSlowStart successes rather than never.
func TestSlowStartBounded(t *testing.T) {
	clk := clockwork.NewFakeClock()
	b, _ := throttle.New(1<<40, throttle.Per(1, time.Second), throttle.WithClock(clk))
	g, _ := throttle.NewLimiter(b)
	var s slowStart
	for range maxSlowStart {
		if !entered(t, &s, g, 1) {
			t.Fatal("a call held under a burst of 2^40")
		}
		s.heard(true)
	}
	if !s.done.Load() {
		t.Fatalf("still in slow start after %d successes", maxSlowStart)
	}
}
