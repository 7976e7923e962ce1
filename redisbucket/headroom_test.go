package redisbucket_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// A reservation taken from a full bucket leaves room for the wire: at 50 a
// second, burst 50, the default 10 ms of headroom is half a token, so the
// fleet's 50th call of a burst is covered 10 ms after the first 49,
// and the 51st 20 ms after that. Without headroom the burst is 50.
func TestReserveWireHeadroom(t *testing.T) {
	r := newRig(t)
	bg := context.Background()
	rate := throttle.Per(50, time.Second)
	off := r.bucket("rwire0", 50, rate, redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0))
	def := r.bucket("rwire", 50, rate, redisbucket.WithWireHeadroom(redisbucket.DefaultWireHeadroom)) // the rig turns it off

	tight, cancel := clockwork.WithTimeout(bg, r.fc, redisbucket.DefaultWireHeadroom-time.Microsecond)
	for i := range 50 {
		if err := off.Acquire(tight, 1); err != nil {
			t.Fatalf("without headroom, call %d of the burst: %v", i+1, err)
		}
	}
	for i := range 49 {
		if err := def.Acquire(tight, 1); err != nil {
			t.Fatalf("call %d of the burst: %v", i+1, err)
		}
	}
	var we *throttle.WaitError
	if err := def.Acquire(tight, 1); !errors.As(err, &we) {
		t.Fatalf("the 50th call within the headroom: %v, want a *throttle.WaitError", err)
	}
	if we.Wait != redisbucket.DefaultWireHeadroom {
		t.Errorf("the 50th call's wait %v, want %v", we.Wait, redisbucket.DefaultWireHeadroom)
	}
	cancel()

	// With a deadline it can meet, it reserves the instant and sleeps.
	ctx, cancel := clockwork.WithTimeout(bg, r.fc, time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- def.Acquire(ctx, 1) }()
	// Two timers: the context's deadline and the sleeper's instant.
	if err := r.fc.BlockUntilContext(bg, 2); err != nil {
		t.Fatal(err)
	}
	r.advance(redisbucket.DefaultWireHeadroom)
	if err := <-done; err != nil {
		t.Fatalf("the 50th call at its instant: %v", err)
	}
	// The 51st is covered a token's time later, 20 ms.
	short, cancel2 := clockwork.WithTimeout(bg, r.fc, 20*time.Millisecond-time.Microsecond)
	defer cancel2()
	if err := def.Acquire(short, 1); !errors.As(err, &we) || we.Wait != 20*time.Millisecond {
		t.Fatalf("the 51st call: %v, want a wait of 20ms", err)
	}
}
