package redisbucket_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// timeouts is a go-redis hook that fails script calls as the call timeout
// would while on is set: a server too slow to answer in time.
type timeouts struct{ on atomic.Bool }

func (h *timeouts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *timeouts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *timeouts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.on.Load() {
			cmd.SetErr(context.DeadlineExceeded)
			return context.DeadlineExceeded
		}
		return next(ctx, cmd)
	}
}

func patienceBucket(t *testing.T) (*rig, *redisbucket.Bucket, *timeouts) {
	r, m := miniRig(t)
	c := miniClient(t, m)
	h := &timeouts{}
	c.(*redis.Client).AddHook(h)
	b, err := redisbucket.New(c, "patience", 100, throttle.Per(100, time.Second), r.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return r, b, h
}

// A server that is slow for a moment (calls past the call timeout, as a
// fleet starting together on few cores makes them) does not open the
// breaker: the decisions taken meanwhile go to the failure policy, and the
// first call answered in time brings the next decisions back to Redis at
// once. Opening at the first timeout kept them on the local share for a
// probe backoff.
func TestBreakerPatienceSlowMoment(t *testing.T) {
	r, b, h := patienceBucket(t)
	h.on.Store(true)
	for range 3 {
		b.TryAcquire(1)
		r.advance(20 * time.Millisecond)
	}
	h.on.Store(false)
	if s := b.Stats(); s.FailureDecisions != 3 || s.BreakerOpens != 0 {
		t.Fatalf("slow moment: %+v, want 3 decisions by the policy and the breaker never open", s)
	}
	before := b.Stats()
	for range 5 {
		if ok, err := b.TryAcquire(1); !ok || err != nil {
			t.Fatalf("after the slow moment: %v %v", ok, err)
		}
	}
	s := b.Stats()
	if s.FailureDecisions != before.FailureDecisions || s.Calls-before.Calls != 5 || redisbucket.BreakerOpen(b) {
		t.Fatalf("after the slow moment the decisions did not go back to Redis at once: %+v (before %+v), %s", s, before, redisbucket.BreakerState(b))
	}
}

// A server that keeps timing out opens the breaker once the patience has
// passed, and the breaker then keeps decisions away from Redis until the
// probe is due. While it is suspect, one decision at a time tries Redis.
func TestBreakerPatienceDeadServerOpens(t *testing.T) {
	r, b, h := patienceBucket(t)
	h.on.Store(true)
	step := 50 * time.Millisecond
	for at := time.Duration(0); at < redisbucket.DefaultBreakerPatience; at += step {
		b.TryAcquire(1)
		if b.Stats().BreakerOpens != 0 {
			t.Fatalf("opened %v after the first timeout, before the patience", at)
		}
		r.advance(step)
	}
	b.TryAcquire(1)
	if s := b.Stats(); s.BreakerOpens != 1 || !redisbucket.BreakerOpen(b) {
		t.Fatalf("still closed after the patience: %+v %s", s, redisbucket.BreakerState(b))
	}
	calls := b.Stats().Calls
	for range 5 {
		b.TryAcquire(1)
	}
	if n := b.Stats().Calls - calls; n != 0 {
		t.Fatalf("%d calls with the breaker open, before its probe", n)
	}
}

// A process that has not counted its fleet yet does not grant from a
// guessed share while Redis is only slow: processes of a large fleet
// starting together on few cores time out before their first count, and
// each taking a tenth of the quota gave 32 processes 3.2 times it. It
// waits for Redis instead (TestBreakerSuspectWaits: so does one that has).
func TestBreakerSuspectUncountedWaits(t *testing.T) {
	_, b, h := patienceBucket(t)
	h.on.Store(true)
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatalf("granted from a guessed share while Redis was slow: %+v", b.Stats())
	}
	h.on.Store(false)
	if ok, err := b.TryAcquire(1); !ok || err != nil {
		t.Fatalf("Redis answering again: %v %v", ok, err)
	}
}

// Nor does a process that has counted its fleet: while Redis is only slow
// it goes on granting the whole quota to the processes it still answers,
// and a grant from this process's share would be over it (64 processes
// starting together on two cores took 33 such grants, and as many vendor
// 429s). It waits for Redis, at most the breaker's patience.
func TestBreakerSuspectWaits(t *testing.T) {
	r, b, h := patienceBucket(t)
	if ok, err := b.TryAcquire(1); !ok || err != nil { // a fleet of one, counted
		t.Fatalf("Redis answering: %v %v", ok, err)
	}
	h.on.Store(true)
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatalf("granted from its share while Redis was only slow: %+v", b.Stats())
	}
	// Past the patience the breaker opens: an outage, decided locally.
	r.advance(redisbucket.DefaultBreakerPatience + time.Millisecond)
	b.TryAcquire(1)
	if !redisbucket.BreakerOpen(b) {
		t.Fatalf("breaker %s after the patience, want open", redisbucket.BreakerState(b))
	}
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatalf("refused by FailLocal with the breaker open: %+v", b.Stats())
	}
	h.on.Store(false)
}

// blocking is a go-redis hook that holds script calls while hold is set,
// until release closes: a call in flight on a slow server.
type blocking struct {
	hold    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (h *blocking) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *blocking) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *blocking) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.hold.CompareAndSwap(true, false) {
			h.entered <- struct{}{}
			<-h.release
		}
		return next(ctx, cmd)
	}
}

// While the breaker is suspect, a waiter that the failure policy holds for
// Redis wakes when the try in flight ends, not on a timer of its own: the
// clock does not move here, and the waiter is granted as soon as the try
// is answered. A step of its own (a millisecond) woke every waiter of every
// process again and again through the try; on two cores shared by 64
// processes starting together those wakings kept the calls past their
// timeout until every breaker opened (fleet harness, reservations: 150-210
// vendor 429s a run, none after).
func TestBreakerSuspectWaiterWakesWithTheTry(t *testing.T) {
	for _, reserve := range []bool{false, true} {
		t.Run(map[bool]string{false: "stepwise", true: "reservations"}[reserve], func(t *testing.T) {
			r, m := miniRig(t)
			c := miniClient(t, m)
			h := &timeouts{}
			bl := &blocking{entered: make(chan struct{}), release: make(chan struct{})}
			c.(*redis.Client).AddHook(h)
			c.(*redis.Client).AddHook(bl)
			var more []redisbucket.Option
			if reserve {
				more = append(more, redisbucket.WithReservations())
			}
			b, err := redisbucket.New(c, "trywake", 100, throttle.Per(100, time.Second), r.opts(more...)...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			if ok, err := b.TryAcquire(1); !ok || err != nil {
				t.Fatalf("Redis answering: %v %v", ok, err)
			}
			h.on.Store(true)
			b.TryAcquire(1) // times out: suspect
			h.on.Store(false)
			if !redisbucket.BreakerSuspect(b) {
				t.Fatalf("breaker %s after a timeout, want suspect", redisbucket.BreakerState(b))
			}
			bl.hold.Store(true)
			// No deadline: the fake clock runs a year ahead. The guard
			// ends a test that would otherwise hang.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			guard := time.AfterFunc(10*time.Second, cancel)
			defer guard.Stop()
			try := make(chan error, 1)
			go func() { try <- b.Acquire(ctx, 1) }() // the try, held in flight
			<-bl.entered
			waiter := make(chan error, 1)
			go func() { waiter <- b.Acquire(ctx, 1) }()
			parked := make(chan error, 1)
			go func() { parked <- r.fc.BlockUntilContext(ctx, 1) }()
			select {
			case err := <-waiter:
				t.Fatalf("the waiter returned (%v) while the try was in flight: %+v", err, b.Stats())
			case err := <-parked: // the waiter sleeps
				if err != nil {
					t.Fatal(err)
				}
			}
			close(bl.release)
			for name, ch := range map[string]chan error{"try": try, "waiter": waiter} {
				select {
				case err := <-ch:
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
				case <-ctx.Done():
					t.Fatalf("%s still waiting after the try was answered, the clock standing still", name)
				}
			}
		})
	}
}
