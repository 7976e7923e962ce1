package redisbucket_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

var _ throttle.Tuner = (*redisbucket.Limiter)(nil)

// wait is l's WaitTime for costs, failing the test on an error.
func wait(t *testing.T, l *redisbucket.Limiter, costs ...int64) time.Duration {
	t.Helper()
	d, err := l.WaitTime(costs...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// take takes costs n times, each of which must be granted at once.
func take(t *testing.T, l *redisbucket.Limiter, n int, costs ...int64) {
	t.Helper()
	for k := range n {
		if ok, err := l.TryAcquire(costs...); !ok || err != nil {
			t.Fatalf("take %d of %d of %v: %v, %v", k+1, n, costs, ok, err)
		}
	}
}

// TestTuneIsForTheFleet: a server's lower quota one process heard (300
// requests a minute against the configured 10 a second) lowers the limit
// for every process on the id, rate and capacity, the other limits
// untouched; a report of the configured quota restores it only once the
// lowered one has stood for TuneHold.
func TestTuneIsForTheFleet(t *testing.T) {
	r := newRig(t)
	one, other := r.limiter("tune", fast), r.limiter("tune", fast)
	take(t, other, 2, 1, 0) // 8 left
	one.Tune(0, 300, time.Minute)
	// 5 a second, capacity 5: the level is capped at it.
	if got := levels(t, other); got[0] != 5 || got[1] != 1000 {
		t.Fatalf("levels %v after Tune(0, 300/min), want [5 1000]", got)
	}
	take(t, other, 5, 1, 0)
	if ok, _ := other.TryAcquire(1, 0); ok {
		t.Fatal("a sixth request went: the capacity is not lowered")
	}
	if d := wait(t, other, 1, 0); d != 200*time.Millisecond {
		t.Fatalf("WaitTime(1, 0) = %v, want 200ms at 5/s", d)
	}
	r.advance(time.Second)
	if got := levels(t, one); got[0] != 5 {
		t.Fatalf("requests %v a second later, want the lowered capacity 5", got[0])
	}
	take(t, one, 5, 1, 0)
	// The tokens limit runs at its configuration.
	take(t, one, 1, 0, 1000)
	if d := wait(t, one, 0, 1); d != time.Millisecond {
		t.Errorf("WaitTime(0, 1) = %v, want 1ms at 1000/s", d)
	}
	// A report of the configured quota within the hold changes nothing
	// (a response the server sent before it lowered its quota).
	other.Tune(0, 600, time.Minute)
	if d := wait(t, one, 1, 0); d != 200*time.Millisecond {
		t.Fatalf("WaitTime(1, 0) = %v after a raise within the hold, want 200ms", d)
	}
	// The same lower quota again: nothing changes, no call is needed.
	calls := one.Stats().Calls
	one.Tune(0, 300, time.Minute)
	if n := one.Stats().Calls - calls; n != 0 {
		t.Errorf("a repeated report made %d calls, want none", n)
	}
	r.advance(redisbucket.TuneHold)
	take(t, other, 5, 1, 0)
	other.Tune(0, 600, time.Minute)
	if d := wait(t, one, 1, 0); d != 100*time.Millisecond {
		t.Fatalf("WaitTime(1, 0) = %v after the configured quota was reported past the hold, want 100ms at 10/s", d)
	}
	r.advance(time.Second)
	if got := levels(t, one); got[0] != 10 {
		t.Errorf("requests %v a second later, want the configured capacity 10", got[0])
	}
	// Out of range, a zero limit or window, a higher quota never lowered:
	// nothing, and no call.
	calls = one.Stats().Calls
	one.Tune(2, 1, time.Second)
	one.Tune(-1, 1, time.Second)
	one.Tune(0, 0, time.Second)
	one.Tune(0, 1, 0)
	one.Tune(1, 120000, time.Minute)
	if n := one.Stats().Calls - calls; n != 0 {
		t.Errorf("reports that change nothing made %d calls", n)
	}
}

// TestTuneLowerAgainAndExpire: a second, lower report lowers the limit
// again at once; a lowered quota nobody reports again ends TuneTTL after
// its last report.
func TestTuneLowerAgainAndExpire(t *testing.T) {
	r := newRig(t)
	one, other := r.limiter("tunettl", fast), r.limiter("tunettl", fast)
	one.Tune(0, 300, time.Minute)
	r.advance(time.Second)
	other.Tune(0, 120, time.Minute) // 2 a second, capacity 2
	if got := levels(t, one); got[0] != 2 {
		t.Fatalf("requests %v after a second, lower report, want 2", got[0])
	}
	take(t, one, 2, 1, 0)
	if d := wait(t, one, 1, 0); d != 500*time.Millisecond {
		t.Fatalf("WaitTime(1, 0) = %v, want 500ms at 2/s", d)
	}
	r.advance(redisbucket.TuneTTL - time.Second)
	if d := wait(t, one, 1, 0); d != 0 {
		t.Fatalf("WaitTime(1, 0) = %v, want 0", d)
	}
	take(t, one, 2, 1, 0)
	if d := wait(t, one, 1, 0); d != 500*time.Millisecond {
		t.Fatalf("WaitTime(1, 0) = %v just before the lowered quota ends, want 500ms", d)
	}
	r.advance(2 * time.Second)
	// Ended: the configured 10 a second, capacity 10.
	take(t, other, 10, 1, 0)
	if d := wait(t, one, 1, 0); d != 100*time.Millisecond {
		t.Errorf("WaitTime(1, 0) = %v after the lowered quota ended, want 100ms at 10/s", d)
	}
}

// TestTunePauseRefills: while a limit runs at a server's quota, a pause
// (a 429 with Retry-After) holds every process until it ends, and the
// limit refills over the pause at that quota as the server does, from
// the level it was lowered to: the fleet spends at the pause's end what
// the server banked meanwhile. A limit at its configuration is released
// from empty, as before. A count heard during the pause lowers the level
// as of then, the refill until the pause's end still to come.
func TestTunePauseRefills(t *testing.T) {
	r := newRig(t)
	one, other := r.limiter("tunepause", fast), r.limiter("tunepause", fast)
	one.Tune(0, 300, time.Minute) // 5 a second, capacity 5
	one.Lower(0, 0)
	one.PauseUntil(r.fc.Now().Add(600 * time.Millisecond))
	if ok, _ := other.TryAcquire(1, 0); ok {
		t.Fatal("a request went during the pause")
	}
	if d := wait(t, other, 1, 0); d != 600*time.Millisecond {
		t.Fatalf("WaitTime(1, 0) in the pause = %v, want its end, 600ms", d)
	}
	// The tokens limit, at its configuration: from empty at the end.
	if d := wait(t, other, 0, 1); d != 601*time.Millisecond {
		t.Fatalf("WaitTime(0, 1) in the pause = %v, want 601ms", d)
	}
	r.advance(200 * time.Millisecond)
	other.Lower(0, 0) // 0 now: 2 more by the end (400ms at 5/s)
	r.advance(400 * time.Millisecond)
	take(t, other, 2, 1, 0)
	if ok, _ := other.TryAcquire(1, 0); ok {
		t.Fatal("a third request went at the pause's end: the count heard in it was not heeded")
	}
	// A pause long enough to refill the lowered capacity banks no more.
	one.PauseUntil(r.fc.Now().Add(3 * time.Second))
	r.advance(3 * time.Second)
	take(t, other, 5, 1, 0)
	if ok, _ := other.TryAcquire(1, 0); ok {
		t.Fatal("more than the lowered capacity was banked over the pause")
	}
}

// TestTuneCostAboveCapacity: a cost above the lowered capacity, within the
// configured one, waits for a full bucket and runs into debt.
func TestTuneCostAboveCapacity(t *testing.T) {
	r := newRig(t)
	l := r.limiter("tunecost", fast)
	l.Tune(1, 30000, time.Minute) // 500 tokens a second, capacity 500
	take(t, l, 1, 0, 100)
	if d := wait(t, l, 0, 800); d != 200*time.Millisecond {
		t.Fatalf("WaitTime(0, 800) = %v, want 200ms to a full 500", d)
	}
	r.advance(200 * time.Millisecond)
	take(t, l, 1, 0, 800)
	if got := levels(t, l); got[1] != -300 {
		t.Fatalf("tokens %v, want -300", got[1])
	}
	if d := wait(t, l, 0, 1); d != 602*time.Millisecond {
		t.Errorf("WaitTime(0, 1) = %v, want 602ms at 500/s", d)
	}
}

// TestTuneShapes: the lowered shape for several servers' limits, exact on
// the server's clock, and reports that lower nothing.
func TestTuneShapes(t *testing.T) {
	for _, c := range []struct {
		capacity int64
		rate     throttle.Rate
		limit    int64
		window   time.Duration
		want     [4]int64 // capacity num den unit; zero: not lowered
	}{
		{50, throttle.Per(3000, time.Minute), 1500, time.Minute, [4]int64{25, 1, 40000, 1}},
		{50, throttle.Per(3000, time.Minute), 3000, time.Minute, [4]int64{}},
		{50, throttle.Per(3000, time.Minute), 6000, time.Minute, [4]int64{}},
		{10, throttle.Per(10, time.Second), 1, time.Hour, [4]int64{1, 1, 3600000000, 1}},
		{5000, throttle.Per(5000, time.Hour), 4999, time.Hour, [4]int64{4999, 4999, 3600000000, 1}},
		{1 << 40, throttle.Per(1<<40, time.Second), 1 << 30, time.Second, [4]int64{1 << 30, 1 << 27, 125, 1000}}, // in ms: exact with 2^40 of debt
		{10, throttle.Per(0, time.Second), 1, time.Hour, [4]int64{}},                                             // no refill: nothing to lower
	} {
		got, lower := redisbucket.TunedShape(c.capacity, c.rate, c.limit, c.window)
		if lower != (c.want != [4]int64{}) || got != c.want {
			t.Errorf("%d at %v, server %d per %v: %v (%v), want %v", c.capacity, c.rate, c.limit, c.window, got, lower, c.want)
		}
	}
}

// TestTunedStateGarbage: a state that carries servers' quotas with a
// malformed entry is garbage like any other (restarted empty), and one
// whose entries are well formed is read: its quota applies.
func TestTunedStateGarbage(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	now := float64(r.fc.Now().UnixMicro())
	pack := packState
	if r.be.Mini != nil {
		pack = textState
	}
	until := now + 1e9
	// One limit of 10 a second, in µs: num 1, den 100000. A quota of 5 a
	// second, capacity 5: num 1, den 200000.
	good := []float64{now, 3, 0, 200000, 0, 0, -1, 5, 1, 200000, 1, now, until}
	for i, c := range []struct {
		v    []float64
		want float64 // the level read, or -1 for a reset
	}{
		{good, 3},
		{[]float64{now, 9, 0, 100000, 0, 0, -1, 5, 1, 200000, 1, now, until}, 5}, // capped at the quota's capacity
		{[]float64{now, 9, 0, 100000, 0, 0, -1, 5, 1, 200000, 1, now, now}, 9},   // ended
		{[]float64{now, 9, 0, 100000, 0, 0, -1, 0, 0, 0, 0, 0, 0}, 9},            // no quota for the limit
		{[]float64{now, 9, 0, 100000, 0, 0, -1, 0, 1, 200000, 1, now, until}, 9}, // cap 0: none
		{[]float64{now, 9, 0, 100000, 0, 0, -1, 5, -1, 200000, 1, now, until}, -1},
		{[]float64{now, 9, 0, 100000, 0, 0, -1, 5, 1, 0, 1, now, until}, -1},
		{[]float64{now, 9, 0, 100000, 0, 0, -1, 5, 1, 200000, 7, now, until}, -1},
		{[]float64{now, 9, 0, 100000, 0, 0, -1, 5.5, 1, 200000, 1, now, until}, -1},
		{[]float64{now, 9, 0, 100000, 0, 0, -1, 5, 1, 200000, 1, -1, until}, -1},
		{[]float64{now, 9, 0, 100000, 0, 0, -1, 5, 1, 200000, 1, now, math.NaN()}, -1},
		{[]float64{now, 9, 0, 100000, 0, 1, -1, 5, 1, 200000, 1, now, until}, 9}, // no marker: four limits, the first read
		{[]float64{now, 0, 1, -1, 9, 0, 100000, 0, 0, 0, 0, 0, 0}, -1},           // no marker: a level of den -1
		{[]float64{now, 0, 0, -1}, -1},
		{[]float64{now, 9, 0, 100000, math.NaN(), 0, -1, 0, 0, 0, 0, 0, 0}, -1}, // a hold not a time
		{[]float64{now, 9, 0, 100000, -5, 0, -1, 0, 0, 0, 0, 0, 0}, -1},
		{[]float64{now, 9, 0, 100000, now + 61e6, 0, -1, 0, 0, 0, 0, 0, 0}, -1}, // held past a minute
		{[]float64{now, 9, 0, 100000, now + 1e6, 0, -1, 0, 0, 0, 0, 0, 0}, 9},   // held a second: 9 then
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			l := r.limiter(fmt.Sprintf("tunedgarbage%d", i), fast[:1])
			if err := r.be.Client().Set(ctx, l.Key(), pack(c.v...), 0).Err(); err != nil {
				t.Fatal(err)
			}
			got := levels(t, l)[0]
			if c.want < 0 {
				if st := l.Stats(); st.StateResets != 1 || got != 0 {
					t.Fatalf("%v: level %v, %d resets; want a reset to 0", c.v, got, st.StateResets)
				}
				return
			}
			if got != c.want {
				t.Fatalf("%v: level %v, want %v", c.v, got, c.want)
			}
		})
	}
}

// TestTuneFastPath: a Limiter of one limit in µs, whose acquisitions take
// the script's fast path, runs at a lowered quota too: the state that
// carries it is not the fast path's, which falls through.
func TestTuneFastPath(t *testing.T) {
	r := newRig(t)
	one, other := r.limiter("tunefast", fast[:1]), r.limiter("tunefast", fast[:1])
	one.Tune(0, 300, time.Minute)
	take(t, other, 5, 1)
	if ok, _ := other.TryAcquire(1); ok {
		t.Fatal("a sixth request went at once at a capacity lowered to 5")
	}
	r.advance(200 * time.Millisecond)
	take(t, one, 1, 1)
	if d := wait(t, other, 1); d != 200*time.Millisecond {
		t.Errorf("WaitTime(1) = %v, want 200ms at 5/s", d)
	}
}

// FuzzTunedState writes a state that carries a server's quota, with any
// numbers, at a Limiter's key: the script reads it or restarts it empty,
// never failing, never reporting a level above the configured capacity or
// beyond the exact range below zero (a deep level is a queue of
// reservations) either way, and decides.
func FuzzTunedState(f *testing.F) {
	f.Add(3.0, 0.0, 200000.0, 0.0, 5.0, 1.0, 200000.0, 1.0, 0.0, 1e9)
	f.Add(9.0, 0.0, 100000.0, 1e6, 5.0, 1.0, 200000.0, 1.0, 0.0, 0.0)
	f.Add(9.0, 0.0, 100000.0, -1.0, 5.0, -1.0, 200000.0, 1.0, 0.0, 1e9)
	f.Add(1e300, 0.5, 0.0, math.NaN(), math.Inf(1), 1.0, 1.0, 1000.0, -1.0, math.NaN())
	f.Add(-20.0, 3.0, 7.0, 6e7, 1e15, 1e15, 1.0, 1e6, 1e9, 1e12)
	r := newRig(f)
	ctx := context.Background()
	pack := packState
	if r.be.Mini != nil {
		pack = textState
	}
	l := r.limiter("fuzztuned", fast[:1])
	c := r.be.Client()
	f.Fuzz(func(t *testing.T, tok, rem, den, hold, tc, tn, td, tu, since, untl float64) {
		now := float64(r.fc.Now().UnixMicro())
		// The hold as stored: at today's instants a float64 holds a
		// quarter of a µs, so a shorter hold rounds away to no hold.
		until := now + hold
		v := pack(now, tok, rem, den, until, 0, -1, tc, tn, td, tu, now+since, now+untl)
		if err := c.Set(ctx, l.Key(), v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		got, err := l.Tokens(ctx)
		if err != nil {
			t.Fatalf("Tokens: %v", err)
		}
		if got[0] > 10 || got[0] < -(1<<50) || math.IsNaN(got[0]) {
			t.Fatalf("level %v from %v, beyond the capacity 10 or the exact range", got[0], []float64{tok, rem, den, hold, tc, tn, td, tu, since, untl})
		}
		ok, err := l.TryAcquire(1)
		if err != nil {
			t.Fatalf("TryAcquire: %v", err)
		}
		if ok && (got[0] < 1 || until > now) {
			t.Fatalf("granted from a level of %v, held for %v µs", got[0], hold)
		}
		if _, err := l.WaitTime(1); err != nil {
			t.Fatalf("WaitTime: %v", err)
		}
	})
}
