package redisbucket

import (
	"testing"
	"time"

	"github.com/throttlekit/throttle"
)

// Replies of calls in flight at once can arrive in another order than the
// server decided them: the view keeps the levels of the latest server
// instant, and still follows a server clock that went back for calls sent
// after the view arrived.
func TestSeenKeepsTheLatestView(t *testing.T) {
	sh, err := newShape("", 10, throttle.Per(1, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	limits := []shape{sh}
	var s seen
	local := time.Unix(1_800_000_000, 0)
	_, _, _, a := s.get(local)
	_, _, _, b := s.get(local)
	s.set(limits, local, 200, []int64{8, 0}, true, carried{}, b) // b, decided second, answers first
	s.set(limits, local, 100, []int64{9, 0}, true, carried{}, a) // a, decided first, answers last
	if tok, _ := s.level(0); tok != 8 || s.now != 200 {
		t.Fatalf("view %d tokens at %d, want 8 at 200: an older reply undid a newer one", tok, s.now)
	}
	_, _, _, c := s.get(local)
	s.set(limits, local, 50, []int64{7, 0}, true, carried{}, c) // the server's clock went back
	if tok, _ := s.level(0); tok != 7 || s.now != 50 {
		t.Fatalf("view %d tokens at %d, want 7 at 50 (a call sent after the view)", tok, s.now)
	}
	// A charge is paid whatever the view.
	s.spent(local, []int64{3})
	_, charge, owed, d := s.get(local)
	_, _, _, e := s.get(local)
	s.set(limits, local, 60, []int64{6, 0}, true, carried{}, e)
	s.set(limits, local, 55, []int64{5, 0}, true, owed, d)
	if _, charge2, _, _ := s.get(local); charge != "3" || charge2 != "" {
		t.Fatalf("charge %q then %q, want 3 then none", charge, charge2)
	}
	if tok, _ := s.level(0); tok != 6 {
		t.Fatalf("view %d tokens, want 6", tok)
	}
}

// level returns the whole tokens of limit i in the last view, and whether
// there is one.
func (s *seen) level(i int) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ok || i >= len(s.toks) {
		return 0, false
	}
	return s.toks[i], true
}
