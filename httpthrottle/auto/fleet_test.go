package auto

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/throttlekit/throttle"

	"github.com/jonboulle/clockwork"
)

// memStore is an Store in memory, on a clock, for tests.
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
func heedTell(t *testing.T, a *Limiter, clk clockwork.Clock, req *http.Request, status int, h http.Header) *autoGate {
	t.Helper()
	return tellAs(t, a, clk, req, status, h, true)
}

// TestAutoFleetSharesLimits: a process that joins a fleet knows the limits
// another member learned before its first response, and its first share
// is an equal part of the limit.
func TestAutoFleetSharesLimits(t *testing.T) {
	clk := newClock()
	store := newMemStore(clk)
	mk := func() *Limiter { return must(New(Clock(clk), Fleet(store), autoRand(0.999999))) }
	a, b := mk(), mk()
	req := get(t, "https://api.example.com/", "Authorization", "Bearer sk-1")
	tell(t, a, clk, req, 200, ietf(50, 1, 49))
	clk.Advance(time.Second)
	tell(t, a, clk, req, 200, ietf(50, 1, 49))
	l, err := b.limiterOf(req)
	if err != nil {
		t.Fatal(err)
	}
	if ln := autoOf(l).lanes[0]; !ln.learned || ln.limit != 50 || ln.window != time.Second {
		t.Fatalf("b's lane before any response: %+v; want the 50/s a learned", ln)
	}
	clk.Advance(time.Second)
	tell(t, b, clk, req, 200, ietf(50, 1, 49))
	if got, want := autoOf(l).lanes[0].rate, 50.0*49/50/2; !near(got, want) {
		t.Errorf("b's first share %v/s; want half of the 50/s at 49 left: %v/s", got, want)
	}
	// Another credential is another quota, in the store too.
	other := get(t, "https://api.example.com/", "Authorization", "Bearer sk-2")
	lo, _ := b.limiterOf(other)
	if autoOf(lo).lanes[0].learned {
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
	var members []*Limiter
	req := get(t, "https://api.example.com/")
	for range 4 {
		a := must(New(Clock(clk), Fleet(store), autoRand(0.999999), InitialRate(throttle.Per(40, time.Second))))
		members = append(members, a)
		tell(t, a, clk, req, 200, http.Header{})
	}
	rate := func(a *Limiter) float64 {
		l, _ := a.limiterOf(req)
		return autoOf(l).lanes[0].rate
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
	until, paused := pausedUntil(l0.bs[0])
	if !paused {
		t.Fatal("the refused member is not paused")
	}
	clk.Advance(autoSyncEvery)
	for i, a := range members[1:] {
		l := heedTell(t, a, clk, req, http.StatusOK, http.Header{})
		if u, ok := pausedUntil(l.bs[0]); !ok || u.Before(until) {
			t.Errorf("member %d paused until %v, %v; want the fleet's pause until %v", i+1, u, ok, until)
		}
	}
	for i, a := range members {
		if got, want := rate(a)*4, grown/2; got > want*1.01 || got < want*0.85 {
			t.Errorf("member %d: fleet rate %v/s after the refusals; want one cut, to about %v/s", i, got, want)
		}
	}
}

// TestAutoFleetSpreadsResume: a member learns of the fleet's pause when
// its call is about to be sent (beforeSend), not only when a response
// comes, and resumes at its own instant within one of its intervals after
// the pause, never past the Transport's MaxPause: members resuming
// together would send one call each at once into the server's bucket.
func TestAutoFleetSpreadsResume(t *testing.T) {
	clk := newClock()
	store := newMemStore(clk)
	req := get(t, "https://api.example.com/")
	var members []*Limiter
	for _, r := range []float64{0.999999, 0.2, 0.8, 0.8} {
		a := must(New(Clock(clk), Fleet(store), autoRand(r), InitialRate(throttle.Per(4, time.Second))))
		members = append(members, a)
		tell(t, a, clk, req, 200, http.Header{})
	}
	lims := make([]*autoGate, len(members))
	for i, a := range members {
		lims[i], _ = a.limiterOf(req)
	}
	// The last member's Transport has a MaxPause of 700ms.
	autoOf(lims[3]).maxPause.Store(int64(700 * time.Millisecond))
	start := clk.Now()
	clk.Advance(autoSyncEvery)
	heedTell(t, members[0], clk, req, http.StatusTooManyRequests, http.Header{})
	// The fleet's pause, as stored; member 0 itself resumes its spread
	// after it.
	var st fleetState
	for _, v := range store.state {
		if err := json.Unmarshal(v, &st); err != nil {
			t.Fatal(err)
		}
	}
	until := time.Unix(0, st.Pause)
	if u, _ := pausedUntil(lims[0].bs[0]); u.Sub(until) < 499*time.Millisecond || u.Sub(until) > 500*time.Millisecond {
		t.Errorf("member 0 resumes %v after the fleet's pause; want its spread, about 500ms", u.Sub(until))
	}
	clk.Advance(autoSyncEvery)
	for i, l := range lims[1:] {
		if !autoOf(l).beforeSend() {
			t.Fatalf("member %d: not paused before sending after member 0's refusal", i+1)
		}
	}
	// The fleet's 16/s cut to 8/s: each member's interval is 500ms.
	for i, want := range []time.Duration{100 * time.Millisecond, 400 * time.Millisecond} {
		u, _ := pausedUntil(lims[i+1].bs[0])
		if d := u.Sub(until); d < want-time.Millisecond || d > want+time.Millisecond {
			t.Errorf("member %d resumes %v after the fleet's pause; want %v", i+1, d, want)
		}
	}
	if u, _ := pausedUntil(lims[3].bs[0]); u.Sub(clk.Now()) > 700*time.Millisecond || u.Sub(start) < until.Sub(start) {
		t.Errorf("member 3 paused until %v from now, the fleet's pause %v; want within its MaxPause of 700ms", u.Sub(clk.Now()), until.Sub(clk.Now()))
	}
	// A member that has had no response does not know its Transport's
	// MaxPause yet: it keeps the fleet's pause, no later.
	fresh, _ := must(New(Clock(clk), Fleet(store), autoRand(0.8), InitialRate(throttle.Per(4, time.Second)))).limiterOf(req)
	if u, ok := pausedUntil(fresh.bs[0]); !ok || !u.Equal(until) {
		t.Errorf("a member with no response yet paused until %v, %v; want the fleet's pause, %v", u, ok, until)
	}
	// The same pause seen again keeps each member's instant, and no
	// member's spread becomes the fleet's pause.
	clk.Advance(autoSyncEvery)
	u1, _ := pausedUntil(lims[1].bs[0])
	for _, l := range lims {
		autoOf(l).beforeSend()
	}
	if u, _ := pausedUntil(lims[1].bs[0]); !u.Equal(u1) {
		t.Errorf("member 1's resume moved from %v to %v on a second sync", u1, u)
	}
	for _, v := range store.state {
		if err := json.Unmarshal(v, &st); err != nil {
			t.Fatal(err)
		}
	}
	if !time.Unix(0, st.Pause).Equal(until) {
		t.Errorf("the fleet's pause moved from %v to %v", until, time.Unix(0, st.Pause))
	}
}

// TestAutoFleetMemberTTL: a member that has not synced for 1.5 of its
// intervals between calls has left, within [1s, 3s]: a member done with its
// calls stops counting soon, and the others take its part of the rate.
func TestAutoFleetMemberTTL(t *testing.T) {
	clk := newClock()
	store := newMemStore(clk)
	req := get(t, "https://api.example.com/")
	mk := func() *autoGate {
		a := must(New(Clock(clk), Fleet(store), autoRand(0.5), InitialRate(throttle.Per(1, time.Second))))
		l, _ := a.limiterOf(req)
		return l
	}
	mk()
	b := mk()
	if m := autoOf(b).members; m != 2 {
		t.Fatalf("%d members; want 2", m)
	}
	for _, tc := range []struct {
		rate float64
		want time.Duration
	}{{4, time.Second}, {1, 1500 * time.Millisecond}, {0.1, 3 * time.Second}} {
		autoOf(b).lanes[0].rate = tc.rate
		if got := autoOf(b).memberTTL(); got != tc.want {
			t.Errorf("at %v/s a member counts for %v; want %v", tc.rate, got, tc.want)
		}
	}
	// The first member is done: 1.5 s later, at 1/s, b is alone.
	autoOf(b).lanes[0].rate = 1
	clk.Advance(1600 * time.Millisecond)
	autoOf(b).beforeSend()
	if m := autoOf(b).members; m != 1 {
		t.Errorf("%d members 1.6 s after the other's last sync; want 1", m)
	}
}
