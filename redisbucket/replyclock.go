package redisbucket

import (
	"sync"
	"time"
)

// replyClock places a server instant on this process's clock for a
// reserved sleeper: the offset between the clocks is the smallest seen
// between a reply's arrival and the server time it carries, so that every
// sleeper of the process counts from the same offset, late by the fastest
// reply's return while the clocks hold (base bounds it when they do not).
// Counted from its own reply's arrival
// instead, each sleeper was late by its reply's return, which a loaded
// machine stretches: 64 processes starting together on two cores returned
// their first replies 7 ms late on average, then 0.1 ms, and the sleepers
// reserved later went that much closer to the earlier ones, the fleet's
// arrivals 0.3% above the quota for seconds, until the vendor's margin was
// spent (a 429).
type replyClock struct {
	mu  sync.Mutex
	ok  bool
	off int64     // µs: local minus server time at the fastest reply
	at  time.Time // the local instant that reply arrived
}

// clockAge is how long it takes the offset to age by 1 µs (200 ppm): two
// clocks drift apart, and an offset kept from long ago would put sleepers
// early by the drift since.
const clockAge = 5000

// sample records a reply that arrived at recv carrying server time us.
func (c *replyClock) sample(recv time.Time, us int64) {
	s := recv.UnixMicro() - us
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok || s <= c.agedLocked(recv) {
		c.ok, c.off, c.at = true, s, recv
	}
}

func (c *replyClock) agedLocked(now time.Time) int64 {
	return c.off + max(now.Sub(c.at).Microseconds(), 0)/clockAge
}

// base returns the local instant of server time us, which a call sent at
// sent was answered with: no later than now (its arrival, which is what a
// sleeper counted from before), and no earlier than sent, since the server
// decided after the call left. That bound holds whatever the clocks do: a
// server whose clock stepped back, or a failover to a node whose clock is
// behind, puts the fastest reply's offset ahead of the truth until the
// offset ages, and the sleeper then goes at most a round trip early.
func (c *replyClock) base(us int64, sent, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok || sent.IsZero() {
		return now
	}
	// From now, so that the instant keeps now's monotonic reading.
	d := us + c.agedLocked(now) - now.UnixMicro()
	if d >= 0 {
		return now
	}
	if t := now.Add(time.Duration(d) * time.Microsecond); t.After(sent) {
		return t
	}
	return sent
}
