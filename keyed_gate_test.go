package throttle

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// A key used through its Gate (TryAcquire, a Take that is covered,
// WaitTime, Status, Limits, Settle within its levels) stays a compact
// record: no key gets a Limiter. A pause makes the key's Limiter, and the
// Gate then decides on it.
func TestKeyedGateStaysCompact(t *testing.T) {
	clk := newClock()
	k := NewKeyed(func(int) []Limit {
		return []Limit{{Name: "requests", Capacity: 4, Rate: Per(1, time.Second)}, {Name: "tokens", Capacity: 100, Rate: Per(10, time.Second)}}
	}, WithClock(clk))
	for key := range 1000 {
		g := k.Gate(key)
		if ok, err := g.(Taker).TryAcquire(1, 10); !ok || err != nil {
			t.Fatalf("key %d: TryAcquire = %v, %v", key, ok, err)
		}
		if _, err := g.(Taker).Take(context.Background(), 1, 50); err != nil {
			t.Fatal(err)
		}
		if err := g.(Taker).Settle([]int64{1, 50}, []int64{1, 20}); err != nil {
			t.Fatal(err)
		}
		if w, err := g.WaitTime(1, 80); err != nil || w != time.Second {
			t.Fatalf("WaitTime = %v, %v, want 1s (10 tokens short at 10/s)", w, err)
		}
		st := g.(Meter).Status(nil)
		if len(st) != 2 || st[0].Remaining != 2 || st[1].Remaining != 70 || st[1].Name != "tokens" {
			t.Fatalf("Status = %+v", st)
		}
		if ls := g.Limits(); len(ls) != 2 || ls[1].Capacity != 100 {
			t.Fatalf("Limits = %+v", ls)
		}
	}
	if n := k.heldCount(); n != 0 {
		t.Fatalf("%d keys got a Limiter, want 0", n)
	}
	g := k.Gate(7)
	g.(Pauser).PauseUntil(clk.Now().Add(time.Minute))
	if n := k.heldCount(); n != 1 {
		t.Fatalf("%d keys have a Limiter after a pause, want 1", n)
	}
	if ok, _ := g.(Taker).TryAcquire(1, 1); ok {
		t.Fatal("a paused key admitted a call")
	}
	if st := g.(Meter).Status(nil); !st[0].Paused.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("Status of the paused key = %+v", st)
	}
	if g != k.Gate(7) || g == k.Gate(8) {
		t.Fatal("Gates of one key are not equal, or Gates of two keys are")
	}
}

// A key's Gate decides as the key's Limiter does, step by step: two
// Keyeds on one clock, one used through Gate (compact, until a charge
// into debt makes its Limiter), the other through Limiter, given the same
// random calls, answer the same and report the same status.
func TestKeyedGateMatchesLimiter(t *testing.T) {
	for seed := range uint64(20) {
		clk := newClock()
		config := func(string) []Limit {
			return []Limit{{Name: "requests", Capacity: 5, Rate: Per(2, time.Second)}, {Name: "tokens", Capacity: 50, Rate: Per(7, 3*time.Second)}}
		}
		kg, kl := NewKeyed(config, WithClock(clk)), NewKeyed(config, WithClock(clk))
		g := kg.Gate("k")
		l := kl.Limiter("k")
		r := rand.New(rand.NewPCG(seed, 1))
		for step := range 300 {
			costs := []int64{r.Int64N(3), r.Int64N(20)}
			switch r.IntN(5) {
			case 0, 1:
				a, aerr := g.(Taker).TryAcquire(costs...)
				b, berr := l.TryAcquire(costs...)
				if a != b || (aerr == nil) != (berr == nil) {
					t.Fatalf("seed %d step %d: TryAcquire%v: gate %v, %v; limiter %v, %v", seed, step, costs, a, aerr, b, berr)
				}
			case 2:
				actual := []int64{r.Int64N(3), r.Int64N(40)}
				aerr, berr := g.(Taker).Settle(costs, actual), l.Settle(costs, actual)
				if (aerr == nil) != (berr == nil) {
					t.Fatalf("seed %d step %d: Settle(%v, %v): gate %v, limiter %v", seed, step, costs, actual, aerr, berr)
				}
			case 3:
				a, aerr := g.WaitTime(costs...)
				b, berr := l.WaitTime(costs...)
				if a != b || (aerr == nil) != (berr == nil) {
					t.Fatalf("seed %d step %d: WaitTime%v: gate %v, %v; limiter %v, %v", seed, step, costs, a, aerr, b, berr)
				}
			case 4:
				clk.Advance(time.Duration(r.Int64N(int64(2 * time.Second))))
			}
			if a, b := g.(Meter).Status(nil), l.Status(nil); !slices.Equal(a, b) {
				t.Fatalf("seed %d step %d: Status: gate %+v, limiter %+v", seed, step, a, b)
			}
		}
	}
}

// A server's refusal told to a key's Gate (an EventRejected, as the HTTP
// Transport reports one) reaches the Keyed's observer without making the
// key a Limiter; a pause's cause makes it, for the pause that follows.
func TestKeyedGateObserve(t *testing.T) {
	clk := newClock()
	log := &eventLog{}
	k := NewKeyed(func(int) []Limit {
		return []Limit{{Name: "requests", Capacity: 4, Rate: Per(1, time.Second)}}
	}, WithClock(clk), WithObserver(log))
	g := k.Gate(1).(Observer)
	g.Observe(Event{Kind: EventRejected, Limit: "requests", Cost: 1, Reason: "rate_limit_exceeded"})
	g.Observe(Event{Kind: EventRejected, Limit: "tokens", Cost: 1})
	if len(log.events) != 1 || log.events[0].Reason != "rate_limit_exceeded" || k.heldCount() != 0 {
		t.Fatalf("events %+v, %d keys with a Limiter; want the one for its limit, none", log.events, k.heldCount())
	}
	until := clk.Now().Add(time.Minute)
	g.Observe(Event{Kind: EventPaused, Limit: "requests", Until: until, Reason: "429 from api: Retry-After 60s"})
	k.Gate(1).(Pauser).PauseUntil(until)
	if st := k.Gate(1).(Meter).Status(nil); st[0].Cause != "429 from api: Retry-After 60s" || k.heldCount() != 1 {
		t.Fatalf("Status %+v, %d held; want the pause's cause, 1", st, k.heldCount())
	}
}
