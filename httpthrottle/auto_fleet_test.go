package httpthrottle

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/throttlekit/throttle"

	"github.com/jonboulle/clockwork"
)

// memStore is an AutoStore in memory, on a clock, for tests.
type memStore struct {
	clk     clockwork.Clock
	mu      sync.Mutex
	state   map[string][]byte
	version map[string]int64
	members map[string]map[string]time.Time
	calls   int
}

func newMemStore(clk clockwork.Clock) *memStore {
	return &memStore{clk: clk, state: map[string][]byte{}, version: map[string]int64{}, members: map[string]map[string]time.Time{}}
}

func (s *memStore) Load(_ context.Context, key, member string, ttl time.Duration) ([]byte, int64, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	m := s.members[key]
	if m == nil {
		m = map[string]time.Time{}
		s.members[key] = m
	}
	now := s.clk.Now()
	m[member] = now
	for k, at := range m {
		if now.Sub(at) > ttl {
			delete(m, k)
		}
	}
	return s.state[key], s.version[key], len(m), nil
}

func (s *memStore) Store(_ context.Context, key string, version int64, state []byte, _ time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.version[key] != version {
		return false, nil
	}
	s.state[key], s.version[key] = append([]byte(nil), state...), version+1
	return true, nil
}

// heedTell passes a response to the quota of req as the Transport does:
// heed first (the pause on a refusal), then Auto's learning.
func heedTell(t *testing.T, a *AutoLimiter, clk clockwork.Clock, req *http.Request, status int, h http.Header) *throttle.Limiter {
	t.Helper()
	return tellAs(t, a, clk, req, status, h, true)
}

// TestAutoFleetSharesLimits: a process that joins a fleet knows the limits
// another member learned before its first response, and its first share
// is an equal part of the limit.
func TestAutoFleetSharesLimits(t *testing.T) {
	clk := newClock()
	store := newMemStore(clk)
	mk := func() *AutoLimiter { return NewAuto(AutoClock(clk), AutoFleet(store), autoRand(0.999999)) }
	a, b := mk(), mk()
	req := get(t, "https://api.example.com/", "Authorization", "Bearer sk-1")
	tell(t, a, clk, req, 200, ietf(50, 1, 49))
	clk.Advance(time.Second)
	tell(t, a, clk, req, 200, ietf(50, 1, 49))
	l, err := b.limiterOf(req)
	if err != nil {
		t.Fatal(err)
	}
	if ln := quotaOf(l).lanes[0]; !ln.learned || ln.limit != 50 || ln.window != time.Second {
		t.Fatalf("b's lane before any response: %+v; want the 50/s a learned", ln)
	}
	clk.Advance(time.Second)
	tell(t, b, clk, req, 200, ietf(50, 1, 49))
	if got, want := quotaOf(l).lanes[0].rate, 50.0*49/50/2; !near(got, want) {
		t.Errorf("b's first share %v/s; want half of the 50/s at 49 left: %v/s", got, want)
	}
	// Another credential is another quota, in the store too.
	other := get(t, "https://api.example.com/", "Authorization", "Bearer sk-2")
	lo, _ := b.limiterOf(other)
	if quotaOf(lo).lanes[0].learned {
		t.Error("another credential's quota knows the first one's limit")
	}
	for k := range store.state {
		if len(k) < len("throttle:auto:api.example.com#")+32 {
			t.Errorf("store key %q; want the host and the credential's hash", k)
		}
	}
}

// TestAutoFleetPaysA429Once: under congestion control (bare 429s), a
// refusal one member sees pauses and cuts every member: the fleet has one
// rate, each member sends its part of it.
func TestAutoFleetPaysA429Once(t *testing.T) {
	clk := newClock()
	store := newMemStore(clk)
	var members []*AutoLimiter
	req := get(t, "https://api.example.com/")
	for range 4 {
		a := NewAuto(AutoClock(clk), AutoFleet(store), autoRand(0.999999), AutoInitialRate(throttle.Per(40, time.Second)))
		members = append(members, a)
		tell(t, a, clk, req, 200, http.Header{})
	}
	rate := func(a *AutoLimiter) float64 {
		l, _ := a.limiterOf(req)
		return quotaOf(l).lanes[0].rate
	}
	// The fleet starts at the members' 4 x 40/s, each member at its part.
	clk.Advance(autoSyncEvery)
	for _, a := range members {
		tell(t, a, clk, req, 200, http.Header{})
	}
	for i, a := range members {
		if got := rate(a); !near(got, 40) {
			t.Fatalf("member %d at %v/s; want a quarter of the fleet's 160/s", i, got)
		}
	}
	// The fleet sends at its rate for 2 s: slow start grows it.
	for range 20 {
		clk.Advance(100 * time.Millisecond)
		for _, a := range members {
			for range 4 {
				tell(t, a, clk, req, 200, http.Header{})
			}
		}
	}
	clk.Advance(autoSyncEvery) // member 0 reads the state the others grew last
	grown := rate(members[0]) * 4
	if grown <= 160 {
		t.Fatalf("fleet rate %v/s after 2 s busy; want above the 160/s it started at", grown)
	}
	// Member 0 is refused: every member pauses and cuts at its next sync,
	// before a refusal of its own.
	clk.Advance(100 * time.Millisecond)
	l0 := heedTell(t, members[0], clk, req, http.StatusTooManyRequests, http.Header{})
	until, paused := core.Buckets(l0)[0].PausedUntil()
	if !paused {
		t.Fatal("the refused member is not paused")
	}
	clk.Advance(autoSyncEvery)
	for i, a := range members[1:] {
		l := heedTell(t, a, clk, req, http.StatusOK, http.Header{})
		if u, ok := core.Buckets(l)[0].PausedUntil(); !ok || u.Before(until) {
			t.Errorf("member %d paused until %v, %v; want the fleet's pause until %v", i+1, u, ok, until)
		}
	}
	for i, a := range members {
		if got, want := rate(a)*4, grown/2; got > want*1.01 || got < want*0.85 {
			t.Errorf("member %d: fleet rate %v/s after the refusals; want one cut, to about %v/s", i, got, want)
		}
	}
}
