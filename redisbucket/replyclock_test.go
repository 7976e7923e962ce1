package redisbucket

import (
	"testing"
	"time"
)

// A sleeper counts from the fastest reply's offset, not from its own
// reply's arrival: a reply that came back late does not make its sleeper
// late, and no sleeper is placed after the arrival it would have counted
// from. The offset ages, so that a clock drifting ahead of the server's
// does not put sleepers early.
func TestReplyClockCountsFromTheFastestReply(t *testing.T) {
	t0 := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	server := t0.UnixMicro() - 3_000_000 // the server's clock 3 s behind
	var c replyClock
	if got := c.base(server, t0); !got.Equal(t0) {
		t.Fatalf("base %v without a sample, want now %v", got, t0)
	}
	c.sample(t0.Add(100*time.Microsecond), server) // 0.1 ms back
	// A reply 7 ms back, 10 ms later: its instant is 7 ms before its
	// arrival, less the fastest reply's 0.1 ms (aged 3 µs in 17 ms).
	recv := t0.Add(17 * time.Millisecond)
	c.sample(recv, server+10_000)
	if got, want := c.base(server+10_000, recv), t0.Add(10*time.Millisecond+103*time.Microsecond); !got.Equal(want) {
		t.Fatalf("base %v, want %v (the fastest reply's offset)", got, want)
	}
	// Never after the arrival.
	if got := c.base(server+20_000, recv); !got.Equal(recv) {
		t.Fatalf("base %v for a server instant after the arrival, want the arrival %v", got, recv)
	}
	// Aged: about 10 ms in 50 s (200 ppm).
	later := t0.Add(50 * time.Second)
	if got, want := c.base(server+50_000_000-20_000, later), later.Add(-9901*time.Microsecond); !got.Equal(want) {
		t.Fatalf("base %v 50 s after the fastest reply, want %v", got, want)
	}
}
