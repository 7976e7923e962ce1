package pool_test

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/pool"
)

// TestStatusSumsMembersOutOfQuarantine: a pool's Status is its members'
// summed (capacity, remaining, rate), without a quarantined member, and
// paused only while every member is, until the first of them resumes.
func TestStatusSumsMembersOutOfQuarantine(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	a, b, c := key(t, clk, 100, 1000), key(t, clk, 50, 500), key(t, clk, 10, 100)
	p := newPool(t, pool.Member{Name: "a", Gate: a}, pool.Member{Name: "b", Gate: b}, pool.Member{Name: "c", Gate: c, Tier: 1})
	if ok, _ := a.TryAcquire(30, 300); !ok {
		t.Fatal("a refused")
	}
	st := p.Status(nil)
	if len(st) != 2 || st[0].Name != "requests" || st[0].Capacity != 160 || st[0].Remaining != 130 ||
		st[0].Rate != throttle.Per(160, time.Minute) || st[1].Capacity != 1600 || st[1].Remaining != 1300 {
		t.Fatalf("Status = %+v", st)
	}
	if st[0].Reset != 18*time.Second || !st[0].Paused.IsZero() {
		t.Errorf("requests reset %v paused %v; want a's 18s to full, no pause", st[0].Reset, st[0].Paused)
	}
	p.Quarantine("b", t0.Add(time.Hour))
	if st := p.Status(nil); st[0].Capacity != 110 || st[0].Remaining != 80 {
		t.Errorf("with b quarantined: %+v", st[0])
	}
	a.PauseUntil(t0.Add(time.Minute))
	if st := p.Status(nil); !st[0].Paused.IsZero() || st[0].Remaining != 10 || st[0].Capacity != 110 {
		t.Errorf("a paused: %+v; want c's 10 left of 110, not paused while c serves", st[0])
	}
	c.PauseUntil(t0.Add(30 * time.Second))
	if st := p.Status(nil); !st[0].Paused.Equal(t0.Add(30 * time.Second)) {
		t.Errorf("paused %v with a and c paused; want c's end, the first", st[0].Paused)
	}
	p.Quarantine("a", t0.Add(time.Hour))
	p.Quarantine("c", t0.Add(time.Hour))
	if st := p.Status(nil); st[0].Remaining != 0 || st[0].Capacity != 100 || st[0].Reset != -1 || !st[0].Paused.IsZero() {
		t.Errorf("every member quarantined: %+v; want the first member's capacity, nothing left", st[0])
	}
	var m throttle.Meter = p
	if got := m.Status(make([]throttle.LimitStatus, 1)); len(got) != 3 {
		t.Errorf("Status appended %d, want 2 after the 1 given", len(got)-1)
	}
}

// TestSumRateAcrossPeriods: members whose rates have different periods
// sum over the first's period, rounded down.
func TestSumRateAcrossPeriods(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	one := func(r throttle.Rate) *throttle.Limiter {
		b, err := throttle.New(10, r, throttle.WithClock(clk), throttle.WithName("requests"))
		if err != nil {
			t.Fatal(err)
		}
		l, _ := throttle.NewLimiter(b)
		return l
	}
	p := newPool(t, pool.Member{Name: "a", Gate: one(throttle.Per(60, time.Minute))}, pool.Member{Name: "b", Gate: one(throttle.Per(1, time.Second))},
		pool.Member{Name: "c", Gate: one(throttle.Per(1, 7*time.Second))})
	if got, want := p.Status(nil)[0].Rate, throttle.Per(60+60+8, time.Minute); got != want {
		t.Errorf("rate %v, want %v", got, want)
	}
}
