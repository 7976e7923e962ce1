package redisbucket_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// The queue's tests pin instants to the microsecond, so they take no
// headroom for the wire (WithWireHeadroom(0)); TestReserveWireHeadroom
// checks what the default adds.
func TestReserveFIFO(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	b := r.bucket("rfifo", 5, throttle.Per(1, time.Second), redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0))
	if ok, _ := b.TryAcquire(5); !ok {
		t.Fatal("full bucket refused")
	}
	order := make(chan string, 3)
	errs := make(chan error, 3)
	sleepers := 0
	start := func(name string, cost int64) {
		go func() {
			err := b.Acquire(ctx, cost)
			order <- name
			errs <- err
		}()
		// Each reservation sleeps on a timer of its own until its instant.
		sleepers++
		if err := r.fc.BlockUntilContext(ctx, sleepers); err != nil {
			t.Fatal(err)
		}
	}
	start("A5", 5) // covered at 5 s
	start("B1", 1) // 6 s
	start("C1", 1) // 7 s

	// One token accrues: B and C could pass, but A came first, and the
	// level below zero is the queue: TryAcquire does not jump it.
	r.advance(time.Second)
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("TryAcquire jumped the queue")
	}
	r.advance(4 * time.Second)
	if got := <-order; got != "A5" {
		t.Fatalf("first grant %s", got)
	}
	for _, want := range []string{"B1", "C1"} {
		r.advance(time.Second)
		if got := <-order; got != want {
			t.Fatalf("grant %s, want %s", got, want)
		}
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if s := b.Stats(); s.Calls > 2+3+3 {
		t.Fatalf("%d calls for 2 TryAcquires, 3 reservations and their confirmations", s.Calls)
	}
}

// A cancelled reservation gives back what nobody reserved behind it: all
// of it at the tail of the queue, and otherwise the part that no later
// instant depends on, so that the waiters behind keep their instants.
func TestReserveCancelledGivesBack(t *testing.T) {
	r := newRig(t)
	b := r.bucket("rcancel", 2, throttle.Per(1, time.Second), redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0))
	b.TryAcquire(2)
	bg := context.Background()
	ctxA, cancelA := context.WithCancel(bg)
	errA := make(chan error, 1)
	go func() { errA <- b.Acquire(ctxA, 2) }() // level -2, covered at 2 s
	if err := r.fc.BlockUntilContext(bg, 1); err != nil {
		t.Fatal(err)
	}
	errB := make(chan error, 1)
	go func() { errB <- b.Acquire(bg, 1) }() // level -3, covered at 3 s
	if err := r.fc.BlockUntilContext(bg, 2); err != nil {
		t.Fatal(err)
	}
	cancelA()
	if err := <-errA; !errors.Is(err, context.Canceled) {
		t.Fatalf("A: %v", err)
	}
	// B's instant depends on one of A's tokens: A gave back the other.
	if tok, err := b.TokensContext(bg); err != nil || tok != -2 {
		t.Fatalf("level %v after A gave back, want -2 (err %v)", tok, err)
	}
	r.advance(2 * time.Second)
	select {
	case err := <-errB:
		t.Fatalf("B went before its instant: %v", err)
	default:
	}
	r.advance(time.Second)
	if err := <-errB; err != nil {
		t.Fatal(err)
	}

	// A reservation at the tail gives back all it took.
	ctxC, cancelC := context.WithCancel(bg)
	errC := make(chan error, 1)
	go func() { errC <- b.Acquire(ctxC, 2) }()
	if err := r.fc.BlockUntilContext(bg, 1); err != nil {
		t.Fatal(err)
	}
	cancelC()
	if err := <-errC; !errors.Is(err, context.Canceled) {
		t.Fatalf("C: %v", err)
	}
	if tok, err := b.TokensContext(bg); err != nil || tok != 1 {
		t.Fatalf("level %v after the tail gave back, want 1 (err %v)", tok, err)
	}
}

// Many waiters are all served, in order, at the bucket's rate, with
// one reservation each and at most one confirmation at its instant.
func TestReserveManyWaiters(t *testing.T) {
	r := newRig(t)
	b := r.bucket("rmany", 1, throttle.Per(100, time.Second), redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0))
	b.TryAcquire(1)
	ctx := context.Background()
	const n = 50
	done := make(chan int, n)
	for i := range n {
		go func() {
			if err := b.Acquire(ctx, 1); err != nil {
				t.Error(err)
			}
			done <- i
		}()
		if err := r.fc.BlockUntilContext(ctx, i+1); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		r.advance(10 * time.Millisecond)
		if got := <-done; got != i {
			t.Fatalf("grant %d went to waiter %d", i, got)
		}
	}
	if s := b.Stats(); s.Granted != n+1 || s.Calls > 2*n+1 {
		t.Fatalf("stats %+v", s)
	}
}

// Waiters on several Limiter instances of one id (a fleet's processes)
// reserve in arrival order and are granted one per token at the rate,
// each at its exact instant, with at most two calls a decision (the
// reservation and, in a process that heard nothing since, one look at its
// instant) however many wait: deciding again after each sleep would cost
// a call per waiter per grant. The tokens hold a minute's worth, as
// vendors' buckets do: a queue longer than a limit that does not bind
// takes to fill would cost each reservation past it one more call
// (TestReserveLeavesAnIdleLimitToItsInstant).
func TestReserveCallsPerDecisionAcrossInstances(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	limits := []redisbucket.Limit{
		{Name: "requests", Capacity: 10, Rate: throttle.Per(10, time.Second)},
		{Name: "tokens", Capacity: 60_000, Rate: throttle.Per(1000, time.Second)},
	}
	const instances, perInstance = 4, 40
	const n = instances * perInstance
	ls := make([]*redisbucket.Limiter, instances)
	for i := range ls {
		ls[i] = r.limiter("rfleet", limits, redisbucket.WithReservations())
	}
	if ok, err := ls[0].TryAcquire(10, 0); !ok || err != nil {
		t.Fatalf("drain: %v %v", ok, err)
	}
	granted := make(chan time.Time, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := ls[i%instances].Acquire(ctx, 1, 5)
			if err != nil {
				t.Error(err)
				return
			}
			granted <- r.fc.Now()
			if err := p.Settle(1, 5); err != nil {
				t.Error(err)
			}
		}()
	}
	// Every waiter sleeps on a timer of its own (step-by-step waiting
	// would put one head per instance on a timer and never get here).
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.fc.BlockUntilContext(bctx, n); err != nil {
		t.Fatal(err)
	}
	start := r.fc.Now()
	for i := range n {
		r.advance(100 * time.Millisecond)
		at := <-granted
		if want := start.Add(time.Duration(i+1) * 100 * time.Millisecond); !at.Equal(want) {
			t.Fatalf("grant %d at %v, want %v", i, at.Sub(start), want.Sub(start))
		}
		select {
		case at := <-granted:
			t.Fatalf("a second grant at %v in one token's time", at.Sub(start))
		default:
		}
	}
	wg.Wait()
	var calls, decisions int64
	for _, l := range ls {
		s := l.Stats()
		calls += s.Calls
		decisions += s.Decisions
	}
	// Each Acquire: one reservation and no look (the pause feed is live
	// from the constructor on); each Settle: one.
	if decisions != n+1 || calls != 1+n+n {
		t.Fatalf("%d calls for %d decisions and %d settlements", calls, decisions, n)
	}
	t.Logf("%d waiters on %d instances: %d calls for %d decisions and %d settlements", n, instances, calls, decisions, n)
}

// A reservation whose instant lies past the caller's deadline is not made:
// the caller learns it at once, and nothing is taken.
func TestReserveDeadlineTakesNothing(t *testing.T) {
	r := newRig(t)
	b := r.bucket("rdeadline", 1, throttle.Per(1, time.Second), redisbucket.WithReservations())
	b.TryAcquire(1)
	ctx, cancel := context.WithDeadline(context.Background(), r.fc.Now().Add(500*time.Millisecond))
	defer cancel()
	var we *throttle.WaitError
	if err := b.Acquire(ctx, 1); !errors.As(err, &we) || we.Wait != time.Second {
		t.Fatalf("err %v", err)
	}
	r.advance(time.Second)
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("the refused reservation took a token")
	}
}

// A limit that does not bind is taken from as at the reservation's instant:
// a bucket that refills to full before then holds, at the instant, its
// capacity less the cost, as the server's does when the call arrives; not
// its capacity, as a take stored now and refilled past the cost would say.
func TestReserveTakesAtTheInstant(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	l := r.limiter("rinstant", []redisbucket.Limit{
		{Name: "requests", Capacity: 1, Rate: throttle.Per(1, time.Second)},
		{Name: "tokens", Capacity: 100, Rate: throttle.Per(100, time.Second)},
	}, redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0))
	if _, err := l.Acquire(ctx, 1, 50); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, 1, 50) // the requests' instant: 1 s
		done <- err
	}()
	if err := r.fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	r.advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := l.Tokens(ctx)
	if err != nil || got[0] != 0 || got[1] != 50 {
		t.Fatalf("levels at the instant %v %v, want [0 50]: the tokens refilled to 100 before the second call took 50", got, err)
	}
}

// A limit that does not bind and would be full long before a reservation's
// instant is left to be taken at the instant, with one more call, rather
// than lowered below its cost now: lowered, it queued every later call
// behind the reservation though nothing on it was short (a request alone
// waited minutes for a bucket of 100 requests holding 99), and a sleeper
// that a give-back on the binding limit covered was still held by it.
func TestReserveLeavesAnIdleLimitToItsInstant(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	l := r.limiter("rlater", []redisbucket.Limit{
		{Name: "requests", Capacity: 100, Rate: throttle.Per(100, time.Minute)},
		{Name: "tokens", Capacity: 10, Rate: throttle.Per(1, time.Minute)},
	}, redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0))
	if _, err := l.Take(ctx, 0, 10); err != nil {
		t.Fatal(err)
	}
	start := r.fc.Now()
	granted := acquireAsleep(t, r, l, 1, 5) // tokens: 5 minutes
	if ok, err := l.TryAcquire(1, 0); !ok || err != nil {
		t.Fatalf("a request alone refused (%v) behind a reservation that waits on tokens", err)
	}
	if got := levels(t, l); got[0] != 99 || got[1] != -5 {
		t.Fatalf("levels %v while the reservation sleeps, want [99 -5]: its request is taken at its instant", got)
	}
	r.advance(5 * time.Minute)
	if at := <-granted; at != start.Add(5*time.Minute) {
		t.Fatalf("granted at +%v, want +5m", at.Sub(start))
	}
	if got := levels(t, l); got[0] != 99 || got[1] != 0 {
		t.Fatalf("levels %v at the instant, want [99 0]", got)
	}
}
