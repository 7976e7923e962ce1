package trtcm

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// TestMarkerClock: a Marker's Clock is the one given with WithClock, and a
// real clock without it.
func TestMarkerClock(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m, err := New(throttle.Per(1, time.Second), 1, throttle.Per(2, time.Second), 2, throttle.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Clock(); got != clk {
		t.Errorf("Clock() = %v, want the fake clock given to New", got)
	}
	m, err = New(throttle.Per(1, time.Second), 1, throttle.Per(2, time.Second), 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Clock(); got == nil || got == clockwork.Clock(clk) {
		t.Errorf("without WithClock: Clock() = %v, want the real clock", got)
	}
}
