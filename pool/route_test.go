package pool_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/pool"
)

func TestNewRefusesBadMembers(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	one, err := throttle.New(5, throttle.Per(5, time.Second), throttle.WithClock(clk), throttle.WithName("requests"))
	if err != nil {
		t.Fatal(err)
	}
	single, _ := throttle.NewLimiter(one)
	k := key(t, clk, 10, 100)
	for name, ms := range map[string][]pool.Member{
		"none":            nil,
		"no name":         {{Gate: k}},
		"no gate":         {{Name: "a"}},
		"twice":           {{Name: "a", Gate: k}, {Name: "a", Gate: key(t, clk, 1, 1)}},
		"negative tier":   {{Name: "a", Gate: k, Tier: -1}},
		"negative weight": {{Name: "a", Gate: k, Weight: -2}},
		"other limits":    {{Name: "a", Gate: k}, {Name: "b", Gate: single}},
	} {
		if _, err := pool.New(ms); !errors.Is(err, throttle.ErrInvalidOption) {
			t.Errorf("%s: New = %v, want ErrInvalidOption", name, err)
		}
	}
}

// Members of equal quota serve in turn from full, then the one with the
// most left.
func TestSpreadsByHeadroom(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	a, b, c := key(t, clk, 10, 1000), key(t, clk, 10, 1000), key(t, clk, 10, 1000)
	p := newPool(t, pool.Member{Name: "a", Gate: a}, pool.Member{Name: "b", Gate: b}, pool.Member{Name: "c", Gate: c})
	var got []string
	for range 6 {
		got = append(got, take(t, p, 1, 10))
	}
	if want := []string{"a", "b", "c", "a", "b", "c"}; !equal(got, want) {
		t.Fatalf("served by %v, want %v", got, want)
	}
	// b spent half its tokens elsewhere: the next calls avoid it until
	// the others are as low.
	if ok, _ := b.TryAcquire(0, 500); !ok {
		t.Fatal("draining b refused")
	}
	count := map[string]int{}
	for range 8 {
		count[take(t, p, 1, 50)]++
	}
	if count["b"] != 0 || count["a"] != 4 || count["c"] != 4 {
		t.Fatalf("served %v, want a and c 4 each, b none", count)
	}
}

// A member whose pause is in force is passed over while others cover the
// call now.
func TestAvoidsPausedMember(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	a, b := key(t, clk, 10, 1000), key(t, clk, 10, 1000)
	p := newPool(t, pool.Member{Name: "a", Gate: a}, pool.Member{Name: "b", Gate: b})
	a.PauseUntil(clk.Now().Add(10 * time.Second))
	for range 5 {
		if m := take(t, p, 1, 1); m != "b" {
			t.Fatalf("served by %s while a is paused", m)
		}
	}
	clk.Advance(10 * time.Second)
	if m := take(t, p, 1, 1); m != "a" {
		t.Fatalf("served by %s, want a (more left) after its pause", m)
	}
}

// A later tier serves only the calls the first would make wait, and the
// first takes them back as soon as it covers them.
func TestTiersOverflowOnlyOnWait(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	ptu := key(t, clk, 1000, 6000) // 100 tokens a second
	p := newPool(t,
		pool.Member{Name: "payg1", Gate: key(t, clk, 1000, 60000), Tier: 1},
		pool.Member{Name: "ptu", Gate: ptu},
		pool.Member{Name: "payg2", Gate: key(t, clk, 1000, 60000), Tier: 1},
	)
	for i := range 60 {
		if m := take(t, p, 1, 100); m != "ptu" {
			t.Fatalf("call %d served by %s with the first tier's quota left", i, m)
		}
	}
	over := map[string]int{}
	for range 4 {
		over[take(t, p, 1, 100)]++
	}
	if over["payg1"] != 2 || over["payg2"] != 2 {
		t.Fatalf("overflow served %v, want 2 each", over)
	}
	clk.Advance(time.Second) // the PTU refills one call's tokens
	if m := take(t, p, 1, 100); m != "ptu" {
		t.Fatalf("served by %s once the first tier covers the call", m)
	}
}

// Weights share the calls among members of one tier.
func TestWeights(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	// Meters: what is used counts divided by the weight.
	p := newPool(t,
		pool.Member{Name: "a", Gate: key(t, clk, 30, 1000), Weight: 2},
		pool.Member{Name: "b", Gate: key(t, clk, 30, 1000)},
	)
	count := map[string]int{}
	for range 30 {
		count[take(t, p, 1, 1)]++
	}
	if count["a"] != 20 || count["b"] != 10 {
		t.Fatalf("served %v, want a 20, b 10", count)
	}
	// No Meter: the calls served count divided by the weight.
	p = newPool(t,
		pool.Member{Name: "a", Gate: noMeter{key(t, clk, 100, 1000)}, Weight: 3},
		pool.Member{Name: "b", Gate: noMeter{key(t, clk, 100, 1000)}},
	)
	clear(count)
	for range 40 {
		count[take(t, p, 1, 1)]++
	}
	if count["a"] != 30 || count["b"] != 10 {
		t.Fatalf("without Meters served %v, want a 30, b 10", count)
	}
}

// noMeter hides a Limiter's capabilities: a Gate and nothing more.
type noMeter struct{ throttle.Gate }

// When no member covers the call now, it waits on the member that serves
// it soonest.
func TestAcquireWaitsOnSoonest(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	a, b := key(t, clk, 60, 1000), key(t, clk, 60, 1000) // a call a second
	p := newPool(t, pool.Member{Name: "a", Gate: a}, pool.Member{Name: "b", Gate: b})
	a.TryAcquire(60, 0)
	b.TryAcquire(60, 0)
	b.PauseUntil(clk.Now().Add(5 * time.Second))
	if w, _ := p.WaitTime(1, 1); w != time.Second {
		t.Fatalf("WaitTime = %v, want 1s (a's refill)", w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	done := make(chan string, 1)
	go func() {
		pm, err := p.Acquire(ctx, 1, 1)
		if err != nil {
			done <- err.Error()
			return
		}
		done <- pm.(*pool.Permit).Member().Name
	}()
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if m := <-done; m != "a" {
		t.Fatalf("served by %s, want a", m)
	}
}

// A deadline before any member could serve fails at once, naming each
// member and from when it could.
func TestAcquireDeadlineNamesMembers(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	a, b := key(t, clk, 60, 1000), key(t, clk, 60, 1000)
	p := newPool(t, pool.Member{Name: "a", Gate: a}, pool.Member{Name: "b", Gate: b})
	a.PauseUntil(clk.Now().Add(time.Minute))
	b.PauseUntil(clk.Now().Add(2 * time.Minute))
	ctx, cancel := clockwork.WithTimeout(context.Background(), clk, 10*time.Second)
	defer cancel()
	_, err := p.Acquire(ctx, 1, 1)
	var ue *pool.UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want an UnavailableError matching DeadlineExceeded", err)
	}
	want := []pool.Unavailable{{Name: "a", Until: t0.Add(time.Minute)}, {Name: "b", Until: t0.Add(2 * time.Minute)}}
	if len(ue.Members) != 2 || ue.Members[0] != want[0] || ue.Members[1] != want[1] {
		t.Fatalf("members %+v, want %+v", ue.Members, want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A Pool's Permit settles and cancels on the member that served it.
func TestPermitSettlesOnMember(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	a := key(t, clk, 10, 1000)
	p := newPool(t, pool.Member{Name: "a", Gate: a})
	pm, err := p.Acquire(context.Background(), 1, 900)
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Settle(1, 100); err != nil {
		t.Fatal(err)
	}
	if st := a.Status(nil); st[1].Remaining != 900 {
		t.Fatalf("a's tokens left %d after settling 900 to 100, want 900", st[1].Remaining)
	}
	pm, _ = p.Acquire(context.Background(), 1, 900)
	if err := pm.Cancel(); err != nil {
		t.Fatal(err)
	}
	if st := a.Status(nil); st[0].Remaining != 9 || st[1].Remaining != 900 {
		t.Fatalf("a's left %d, %d after a cancel, want 9, 900", st[0].Remaining, st[1].Remaining)
	}
}
