package redisbucket_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
	"github.com/throttlekit/throttle/redisbucket/internal/redistest"
)

// miniRig is a rig on a miniredis of its own, whatever the backend: these
// tests break the server on purpose (SetError), which a shared real server
// does not allow.
func miniRig(t *testing.T) (*rig, *miniredis.Miniredis) {
	m := miniredis.RunT(t)
	be := &redistest.Backend{Name: "miniredis", Addr: m.Addr(), Mini: m, Prefix: "t:"}
	t.Logf("redis backend: miniredis of its own (this test breaks the server on purpose)")
	r := newRigOn(t, be)
	r.allowFailures = true
	return r, m
}

func miniClient(t *testing.T, m *miniredis.Miniredis) redis.UniversalClient {
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestBreakerFailLocal(t *testing.T) {
	r, m := miniRig(t)
	var rec recorder
	b, err := redisbucket.New(miniClient(t, m), "br", 10, throttle.Per(10, time.Second),
		append(r.opts(), redisbucket.WithProbeBackoff(100*time.Millisecond, time.Second), redisbucket.WithObserver(&rec))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if ok, err := b.TryAcquire(1); !ok || err != nil {
		t.Fatalf("healthy: %v %v", ok, err)
	}
	m.SetError("LOADING Redis is loading the dataset in memory")
	// The local bucket holds a tenth: capacity 1 at 1/s.
	if ok, err := b.TryAcquire(1); !ok || err != nil {
		t.Fatalf("first failure-mode decision: %v %v", ok, err)
	}
	calls := b.Stats().Calls
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("local bucket granted beyond its capacity")
	}
	if s := b.Stats(); s.Calls != calls || s.FailureDecisions != 2 || s.FailureGranted != 1 || s.BreakerOpens != 1 {
		t.Fatalf("open breaker still calls, or miscounts: %+v", s)
	}
	if n := rec.count(func(e redisbucket.Event) bool { return e.Mode == redisbucket.ModeFailLocal && e.Err != nil }); n != 2 {
		t.Fatalf("observer saw %d failure-mode events: %v", n, rec.kinds())
	}
	// A failed probe schedules the next one further away.
	r.advance(150 * time.Millisecond)
	b.TryAcquire(1) // probe: fails
	if s := b.Stats(); s.Calls != calls+1 {
		t.Fatalf("no probe after the backoff: %+v", s)
	}
	r.advance(150 * time.Millisecond)
	b.TryAcquire(1)
	if s := b.Stats(); s.Calls != calls+1 {
		t.Fatalf("probed again before the longer backoff: %+v", s)
	}
	m.SetError("")
	r.advance(time.Second)
	// The probe finds Redis: the first process back after the fleet's
	// outage takes the key as at most empty (its shares spent the refill),
	// and the next token comes 100 ms later.
	if ok, err := b.TryAcquire(1); ok || err != nil {
		t.Fatalf("the first decision back on Redis after the outage: %v %v, want refused", ok, err)
	}
	s := b.Stats()
	if s.Calls != calls+2 || s.FailureDecisions != 4 {
		t.Fatalf("recovery probe not sent: %+v", s)
	}
	r.advance(100 * time.Millisecond)
	if ok, err := b.TryAcquire(1); !ok || err != nil {
		t.Fatalf("after recovery: %v %v", ok, err)
	}
	s = b.Stats()
	b.TryAcquire(1)
	if s2 := b.Stats(); s2.Calls != s.Calls+1 || s2.FailureDecisions != s.FailureDecisions {
		t.Fatalf("breaker did not close: %+v", s2)
	}
}

func TestFailClosedAndOpen(t *testing.T) {
	r, m := miniRig(t)
	c := miniClient(t, m)
	closed, _ := redisbucket.New(c, "closed", 5, throttle.Per(1, time.Second), append(r.opts(), redisbucket.WithFailurePolicy(redisbucket.FailClosed))...)
	open, _ := redisbucket.New(c, "open", 5, throttle.Per(1, time.Second), append(r.opts(), redisbucket.WithFailurePolicy(redisbucket.FailOpen))...)
	t.Cleanup(func() { closed.Close(); open.Close() })
	m.SetError("MASTERDOWN Link with MASTER is down")
	for range 20 {
		if ok, err := closed.TryAcquire(1); ok || err != nil {
			t.Fatalf("FailClosed: %v %v", ok, err)
		}
		if ok, err := open.TryAcquire(5); !ok || err != nil {
			t.Fatalf("FailOpen: %v %v", ok, err)
		}
	}
	err := closed.Acquire(context.Background(), 1)
	if !errors.Is(err, redisbucket.ErrUnavailable) {
		t.Fatalf("FailClosed Acquire: %v", err)
	}
	if err := open.Acquire(context.Background(), 1); err != nil {
		t.Fatalf("FailOpen Acquire: %v", err)
	}
	if s := closed.Stats(); s.FailureDecisions != 21 || s.FailureGranted != 0 {
		t.Fatalf("closed stats %+v", s)
	}
	if s := open.Stats(); s.FailureDecisions != 21 || s.FailureGranted != 21 {
		t.Fatalf("open stats %+v", s)
	}
	if got := open.Tokens(); got != 5 {
		t.Fatalf("FailOpen Tokens %v", got)
	}
	if got := closed.Tokens(); got != 0 {
		t.Fatalf("FailClosed Tokens %v", got)
	}
}

// A real error (here an error reply that is not a transient one, as an
// ACL refusal gives) is returned, not hidden by the failure policy. (A key
// of the wrong type is garbage state: TestWrongTypeKeyResetsEmpty.)
func TestHardErrorsAreReturned(t *testing.T) {
	r, m := miniRig(t)
	c := miniClient(t, m)
	b, _ := redisbucket.New(c, "wrong", 5, throttle.Per(1, time.Second), append(r.opts(), redisbucket.WithFailurePolicy(redisbucket.FailOpen))...)
	t.Cleanup(func() { b.Close() })
	m.SetError("NOPERM this user has no permissions to run the 'evalsha' command")
	defer m.SetError("")
	if ok, err := b.TryAcquire(1); ok || err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("NOPERM hidden: %v %v", ok, err)
	}
	if s := b.Stats(); s.FailureDecisions != 0 || s.BreakerOpens != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// Acquire under FailLocal waits on the local bucket while Redis is down and
// goes back to Redis when a probe succeeds; a permit granted locally settles
// locally.
func TestAcquireFailLocal(t *testing.T) {
	r, m := miniRig(t)
	ctx := context.Background()
	l, err := redisbucket.NewLimiter(miniClient(t, m), "al", rpmTPM, append(r.opts(),
		redisbucket.WithFailurePolicy(redisbucket.FailLocal(throttle.Per(1, time.Minute), throttle.Per(50, time.Minute))),
		redisbucket.WithProbeBackoff(time.Hour, time.Hour))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	m.SetError("LOADING")
	// Local limits: capacity 1 at 1/min and 50 at 50/min.
	p, err := l.Acquire(ctx, 1, 50)
	if err != nil || p.(*redisbucket.Permit).Mode() != redisbucket.ModeFailLocal {
		t.Fatalf("local permit: %v %v", p, err)
	}
	if err := p.Settle(1, 20); err != nil { // refunds 30 locally
		t.Fatal(err)
	}
	if v, _ := l.Tokens(ctx); v[0] != 0 || v[1] != 30 {
		t.Fatalf("local levels %v", v)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, 1, 30)
		done <- err
	}()
	if err := r.fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.advance(time.Minute) // the local request limit refills
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := l.Stats(); s.FailureDecisions != 2 || s.FailureGranted != 2 || s.Calls != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestScriptFlushRecovers(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.be.Client()
	b := r.bucket("flush", 5, throttle.Per(1, time.Second))
	if ok, err := b.TryAcquire(1); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.ScriptExists(ctx, redis.NewScript(redisbucket.ScriptSource).Hash()).Result(); err != nil || ok[0] {
		t.Fatalf("script still loaded: %v %v", ok, err)
	}
	if ok, err := b.TryAcquire(1); !ok || err != nil {
		t.Fatalf("after SCRIPT FLUSH: %v %v", ok, err)
	}
	if got := b.Tokens(); got != 3 {
		t.Fatalf("tokens %v", got)
	}
	if s := b.Stats(); s.CallErrors != 0 {
		t.Fatalf("NOSCRIPT surfaced: %+v", s)
	}
}

// TestKillAndRecover kills a real redis-server in the middle of a run with
// goroutines deciding in a loop: decisions switch to the failure policy
// with no error and no panic, and go back to Redis when it is restarted.
// This test runs on the real clock, bounded by a few seconds.
func TestKillAndRecover(t *testing.T) {
	srv := redistest.StartServer(t)
	t.Logf("redis backend: redis-server started by the test at %s", srv.Addr)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, DisableIdentity: true, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { client.Close() })
	var redisGrants, failureDecisions, unnamed atomic.Int64
	obs := observerFunc(func(e redisbucket.Event) {
		if e.Mode == redisbucket.ModeRedis {
			redisGrants.Add(1)
		} else if e.Mode.Failure() {
			failureDecisions.Add(1)
			// What a log or a metric keys on: the outage and the server.
			if !errors.Is(e.Err, redisbucket.ErrUnavailable) || !strings.Contains(e.Err.Error(), srv.Addr) {
				unnamed.Add(1)
			}
		}
	})
	b, err := redisbucket.New(client, "kill", 50, throttle.Per(1000, time.Second), redisbucket.WithObserver(obs),
		redisbucket.WithProbeBackoff(10*time.Millisecond, 50*time.Millisecond), redisbucket.WithCallTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop); wg.Wait() }) }
	defer halt() // also when a wait below fails
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := b.TryAcquire(1); err != nil {
					errs <- err
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				err := b.Acquire(ctx, 1)
				cancel()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) { // a slow machine may time out
					errs <- err
					return
				}
			}
		}()
	}
	waitUntil(t, "decisions by Redis", func() bool { return redisGrants.Load() > 100 })
	srv.Stop()
	waitUntil(t, "decisions by the failure policy", func() bool { return failureDecisions.Load() > 100 })
	srv.Restart()
	before := redisGrants.Load()
	waitUntil(t, "decisions by Redis after the restart", func() bool { return redisGrants.Load() > before+100 })
	halt()
	close(errs)
	for err := range errs {
		t.Fatalf("a decision failed: %v", err)
	}
	if n := unnamed.Load(); n > 0 {
		t.Errorf("%d decisions in failure mode reached the observer without an Err matching ErrUnavailable and naming %s", n, srv.Addr)
	}
	t.Logf("stats %+v", b.Stats())
}

type observerFunc func(redisbucket.Event)

func (f observerFunc) Observe(e redisbucket.Event) { f(e) }

// waitUntil polls cond on the real clock for at most 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitFor(t, what, 10*time.Second, cond)
}

// waitFor is waitUntil with its own limit, for what the server, not the
// package, takes its time over.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
