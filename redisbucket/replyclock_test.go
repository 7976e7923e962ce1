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
	if got := c.base(server, t0, t0); !got.Equal(t0) {
		t.Fatalf("base %v without a sample, want now %v", got, t0)
	}
	c.sample(t0.Add(100*time.Microsecond), server) // 0.1 ms back
	// A reply 7 ms back, 10 ms later: its instant is 7 ms before its
	// arrival, less the fastest reply's 0.1 ms (aged 3 µs in 17 ms).
	recv := t0.Add(17 * time.Millisecond)
	c.sample(recv, server+10_000)
	if got, want := c.base(server+10_000, t0.Add(9*time.Millisecond), recv), t0.Add(10*time.Millisecond+103*time.Microsecond); !got.Equal(want) {
		t.Fatalf("base %v, want %v (the fastest reply's offset)", got, want)
	}
	// Never before the call was sent: a server clock that stepped 1 s
	// back (or a failover to a node behind) makes the fastest reply's
	// offset 1 s ahead of the truth.
	if got, sent := c.base(server+10_000-1_000_000, recv.Add(-200*time.Microsecond), recv), recv.Add(-200*time.Microsecond); !got.Equal(sent) {
		t.Fatalf("base %v for a server clock 1 s back, want the call's sending %v", got, sent)
	}
	// Never after the arrival.
	if got := c.base(server+20_000, t0.Add(9*time.Millisecond), recv); !got.Equal(recv) {
		t.Fatalf("base %v for a server instant after the arrival, want the arrival %v", got, recv)
	}
	// Aged: about 10 ms in 50 s (200 ppm).
	later := t0.Add(50 * time.Second)
	if got, want := c.base(server+50_000_000-20_000, later.Add(-time.Second), later), later.Add(-9901*time.Microsecond); !got.Equal(want) {
		t.Fatalf("base %v 50 s after the fastest reply, want %v", got, want)
	}
}
