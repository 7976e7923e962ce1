package redisbucket_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
	"github.com/throttlekit/throttle/redisbucket/internal/redistest"
)

// A decision a frozen server (SIGSTOP) held past the call timeout reaches
// the script when the server resumes, long after its client gave it up:
// it applies nothing. Applied, each such call took its costs for no call,
// and its write hid from the fleet's first process back that the fleet
// had been away (see the back key in bucket.lua).
func TestLateDecisionsApplyNothing(t *testing.T) {
	srv := redistest.StartServer(t)
	redistest.Announce(t, "redis-server started by the test at "+srv.Addr+" (frozen and thawed)")
	newLimiter := func() *redisbucket.Limiter {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, DisableIdentity: true, ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		lim, err := redisbucket.NewLimiter(c, "late", []redisbucket.Limit{
			{Name: "requests", Capacity: 10, Rate: throttle.Per(1, time.Hour)},
			{Name: "tokens", Capacity: 1000, Rate: throttle.Per(1, time.Hour)},
		}, redisbucket.WithPrefix("late:"), redisbucket.WithCallTimeout(50*time.Millisecond),
			redisbucket.WithFailurePolicy(redisbucket.FailClosed))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lim.Close() })
		return lim
	}
	lim := newLimiter()
	// The view the deadline is estimated from is late by its call's
	// round trip: the first call dials and loads the script, the last
	// takes a millisecond or less.
	for range 3 {
		if _, err := lim.Tokens(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := lim.TryAcquire(1, 100); !ok || err != nil {
		t.Fatalf("healthy: %v %v", ok, err)
	}
	srv.Freeze()
	start := time.Now()
	if ok, _ := lim.TryAcquire(2, 200); ok {
		t.Fatal("granted by a frozen server")
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("the call returned after %v, before its call timeout: it never reached the server", took)
	}
	// Real time, not a goroutine's progress: the server resumes well
	// past the deadline, beyond that round trip on a loaded machine.
	time.Sleep(200 * time.Millisecond)
	srv.Thaw()
	// Another process reads the levels once the server has run what it
	// held.
	lv, err := newLimiter().Tokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if lv[0] < 9 || lv[1] < 900 {
		t.Fatalf("levels %v after the thaw, want [9 900]: the call given up was applied", lv)
	}
}

// A server whose clock jumped ahead (a failover to another host) puts
// this client's estimate of a decision's deadline behind the script's
// clock: the script finds it late, and the client, still waiting, sends
// it once more without one.
func TestLateByAClockJumpGoesAgain(t *testing.T) {
	r := newRig(t)
	var ahead atomic.Int64
	jump := func(d time.Duration) {
		if r.be.Mini != nil {
			r.be.Mini.SetTime(r.fc.Now().Add(d))
		}
		ahead.Store(int64(d))
	}
	var more []redisbucket.Option
	if r.be.Mini == nil {
		more = append(more, redisbucket.WithServerTime(func() time.Time { return r.fc.Now().Add(time.Duration(ahead.Load())) }))
	}
	lim := r.limiter("jump", []redisbucket.Limit{
		{Name: "requests", Capacity: 10, Rate: throttle.Per(1, time.Hour)},
		{Name: "tokens", Capacity: 1000, Rate: throttle.Per(1, time.Hour)},
	}, more...)
	if ok, err := lim.TryAcquire(1, 100); !ok || err != nil {
		t.Fatalf("first: %v %v", ok, err)
	}
	jump(time.Minute)
	calls := lim.Stats().Calls
	if ok, err := lim.TryAcquire(1, 100); !ok || err != nil {
		t.Fatalf("after the server's clock jumped a minute ahead: %v %v, want granted", ok, err)
	}
	if n := lim.Stats().Calls - calls; n != 2 {
		t.Fatalf("%d calls for the decision after the jump, want 2 (late, then without a deadline)", n)
	}
	// (The minute the server's clock jumped refilled a sixtieth.)
	if lv := levels(t, lim); lv[0] < 8 || lv[0] > 8.1 || lv[1] < 800 || lv[1] > 800.1 {
		t.Fatalf("levels %v, want 8 and 800: the late call applied nothing, the second took once", lv)
	}
	calls = lim.Stats().Calls
	if ok, err := lim.TryAcquire(1, 100); !ok || err != nil || lim.Stats().Calls-calls != 1 {
		t.Fatalf("the next decision: %v %v in %d calls, want granted in 1 (the view caught up)", ok, err, lim.Stats().Calls-calls)
	}
}
