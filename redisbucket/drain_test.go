package redisbucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

var (
	_ throttle.Pauser  = (*redisbucket.Limiter)(nil)
	_ throttle.Leveler = (*redisbucket.Limiter)(nil)
)

// fast is 10 requests a second and 1,000 tokens a second.
var fast = []redisbucket.Limit{
	{Name: "requests", Capacity: 10, Rate: throttle.Per(10, time.Second)},
	{Name: "tokens", Capacity: 1000, Rate: throttle.Per(1000, time.Second)},
}

// TestLowerIsForTheFleet: a remaining count one process heard lowers the
// shared level for every process, never raising it, never below a debt of
// one capacity.
func TestLowerIsForTheFleet(t *testing.T) {
	r := newRig(t)
	one, other := r.limiter("lower", fast), r.limiter("lower", fast)
	one.Lower(1, 300)
	if got := levels(t, other); got[0] != 10 || got[1] != 300 {
		t.Fatalf("levels %v after Lower(1, 300), want [10 300]", got)
	}
	other.Lower(1, 500) // a higher count raises nothing
	if got := levels(t, one); got[1] != 300 {
		t.Errorf("tokens %v after Lower(1, 500), want 300", got[1])
	}
	one.Lower(0, -50) // at most one capacity of debt
	if got := levels(t, other); got[0] != -10 {
		t.Errorf("requests %v after Lower(0, -50), want -10", got[0])
	}
	one.Lower(2, 0) // out of range: nothing
	one.Lower(-1, 0)
	if got := levels(t, other); got[0] != -10 || got[1] != 300 {
		t.Errorf("levels %v after out-of-range Lowers", got)
	}
}

// TestPauseIsForTheFleet: a pause one process heard (a 429 with
// Retry-After) holds every process on the id until it ends, and then the
// limits are released at their rates from empty; a later pause extends,
// an earlier one changes nothing, and none runs past MaxPause.
func TestPauseIsForTheFleet(t *testing.T) {
	r := newRig(t)
	one, other := r.limiter("pause", fast), r.limiter("pause", fast)
	one.PauseUntil(r.fc.Now().Add(2 * time.Second))
	if ok, err := other.TryAcquire(1, 0); ok || err != nil {
		t.Fatalf("another process was granted during the pause (%v, %v)", ok, err)
	}
	// From empty at the pause's end, one request a tenth of a second later.
	if d, err := other.WaitTime(1, 0); d != 2100*time.Millisecond || err != nil {
		t.Fatalf("WaitTime(1, 0) in the pause = %v, %v; want 2.1s", d, err)
	}
	one.PauseUntil(r.fc.Now().Add(time.Second)) // earlier: nothing
	if d, _ := other.WaitTime(0, 1); d != 2001*time.Millisecond {
		t.Errorf("WaitTime(0, 1) after an earlier pause = %v, want 2.001s", d)
	}
	r.advance(2100 * time.Millisecond)
	if ok, err := other.TryAcquire(1, 100); !ok || err != nil {
		t.Errorf("after the pause: TryAcquire(1, 100) = %v, %v; want granted", ok, err)
	}
	if ok, _ := other.TryAcquire(1, 0); ok {
		t.Error("the pause ended with tokens banked: a second request went at once")
	}
	one.PauseUntil(r.fc.Now().Add(time.Hour))
	if d, _ := other.WaitTime(1, 0); d != redisbucket.MaxPause+100*time.Millisecond {
		t.Errorf("WaitTime(1, 0) after an hour's pause = %v, want MaxPause + 100ms", d)
	}
}

// TestPauseInFailureMode: with Redis unreachable a pause cannot reach the
// fleet, but it holds this process: its FailLocal buckets pause until the
// server's instant, and a count lowers them to their share of it.
func TestPauseInFailureMode(t *testing.T) {
	c := clientAt(t, closedPort(t))
	fc := clockwork.NewFakeClock()
	l, err := redisbucket.NewLimiter(c, "pause", fast, redisbucket.WithStartWithoutRedis(), redisbucket.WithClock(fc),
		redisbucket.WithProbeBackoff(time.Hour, time.Hour)) // no probe on this test's time line
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if ok, err := l.TryAcquire(1, 10); !ok || err != nil {
		t.Fatalf("before the pause: %v, %v", ok, err)
	}
	l.PauseUntil(fc.Now().Add(2 * time.Second))
	if ok, _ := l.TryAcquire(1, 10); ok {
		t.Fatal("granted during the pause")
	}
	if w, _ := l.WaitTime(1, 10); w < 2*time.Second {
		t.Fatalf("wait %v during a pause of 2s", w)
	}
	// Released at the local rate from the level before the pause, as the
	// core bucket does: the request's token 1 s later.
	fc.Advance(2 * time.Second)
	if w, _ := l.WaitTime(1, 10); w != time.Second {
		t.Fatalf("wait %v at the pause's end, want 1s", w)
	}
	fc.Advance(time.Second)
	if ok, err := l.TryAcquire(1, 10); !ok || err != nil {
		t.Fatalf("after the pause: %v, %v", ok, err)
	}
	// 100 tokens left of the fleet's 1000 is 10 of the local 100.
	fc.Advance(time.Minute)
	l.Lower(1, 100)
	if got, _ := l.Tokens(context.Background()); got[1] != 10 {
		t.Fatalf("local tokens %v after Lower(1, 100), want 10", got)
	}
}
