package redisbucket_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// A key Redis lost while reservations were queued on it is rebuilt with
// the queue still ahead: the sleepers go at their instants without Redis,
// and a key rebuilt empty granted on top of them (fleet harness at 32
// processes: a vendor 429 at the first grant after a kill). Here B
// reserves two sleepers 1 s and 2 s ahead; A sees the queue, loses Redis,
// and comes back 0.3 s later to a restarted server without the key: the
// level it rebuilds is the queue's, refilled since, not empty.
func TestRecoveryLostKeyKeepsTheQueue(t *testing.T) {
	r, m := miniRig(t)
	a, cut := cutBucket(t, r, m) // took 1 of 10
	b, err := redisbucket.New(miniClient(t, m), "back", 10, throttle.Per(10, time.Second),
		r.opts(redisbucket.WithCallTimeout(50*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := b.TryAcquire(9); !ok || err != nil {
		t.Fatalf("B's 9 of 9 left: %v %v", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range 2 {
		wg.Go(func() { b.Acquire(ctx, 10) })
	}
	untilLevel(t, a, -20) // both reserved, in A's view too
	cut.Store(true)
	a.TryAcquire(1) // A's breaker opens
	m.FlushAll()    // the server restarted without the key
	cut.Store(false)
	start := r.fc.Now()
	for redisbucket.BreakerOpen(a) {
		if r.fc.Since(start) > 500*time.Millisecond {
			t.Fatal("A not back on Redis")
		}
		r.advance(100 * time.Millisecond)
		if ok, _ := a.TryAcquire(1); ok {
			t.Fatalf("A granted at +%v, B's sleepers queued until +2s", r.fc.Since(start))
		}
	}
	since := r.fc.Since(start)
	lv := bucketLevel(t, a)
	want := -20 + 10*since.Seconds()
	t.Logf("A back at +%v: level %v", since, lv)
	if lv > want+1 {
		t.Fatalf("level %v after A's return at +%v on a key Redis lost, want the queue refilled since, %v", lv, since, want)
	}
}

// The queue is taken as deep as last seen until Redis was lost, not until
// the last reply: the fleet's other processes reserved behind it
// meanwhile. A process whose calls all sleep learns of a kill from its
// pause feed, which breaks at once. Here A sees a 1 s queue, B reserves
// 0.5 s later (the queue still 1 s deep), the server restarts without the
// key, and A's first call 0.1 s later rebuilds it: from A's reply the
// queue would have drained half (level -4); from the break, -9.
func TestRecoveryLostQueueDatedByTheFeed(t *testing.T) {
	r, m := miniRig(t)
	opts := r.opts(redisbucket.WithCallTimeout(50 * time.Millisecond))
	a, err := redisbucket.New(miniClient(t, m), "dated", 10, throttle.Per(10, time.Second), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := redisbucket.New(miniClient(t, m), "dated", 10, throttle.Per(10, time.Second), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := b.TryAcquire(10); !ok || err != nil {
		t.Fatalf("B's 10: %v %v", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { b.Acquire(ctx, 10) })
	untilLevel(t, a, -10) // A's last reply
	r.advance(500 * time.Millisecond)
	wg.Go(func() { b.Acquire(ctx, 5) })
	untilLevel(t, b, -9)
	breaks := redisbucket.FeedBreaks(a)
	m.Close()
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	m.FlushAll()
	for deadline := time.Now().Add(10 * time.Second); redisbucket.FeedBreaks(a) == breaks; {
		if time.Now().After(deadline) {
			t.Fatal("A's pause feed did not break at the restart")
		}
	}
	r.advance(100 * time.Millisecond)
	a.TryAcquire(1)
	lv := bucketLevel(t, a)
	t.Logf("level %v after A's first call on the rebuilt key", lv)
	if lv > -8 {
		t.Fatalf("level %v after A's first call on the rebuilt key, want the queue as deep as A saw it until the restart (-9)", lv)
	}
}

// A freeze keeps the key, which refills while Redis is away as the local
// shares grant: the first process back takes it as at most empty even if
// its own share granted nothing, when its policy grants without Redis (so
// may the others'). Before, only a return with grants did, and a process
// whose share was held (a fleet's queue deeper than its share) came back
// first to the whole refill (32 processes through a 3 s freeze: the fleet
// spent it at once on top of another's local grants, 1-5 vendor 429s).
func TestRecoveryFrozenKeyTakenEmptyByAnyReturn(t *testing.T) {
	r, m := miniRig(t)
	a, cutA := cutBucket(t, r, m)
	b, cutB := cutBucket(t, r, m)
	if ok, err := a.TryAcquire(8); !ok || err != nil {
		t.Fatalf("the last 8: %v %v", ok, err)
	}
	cutA.Store(true)
	cutB.Store(true)
	a.TryAcquire(1) // both breakers open, the shares empty
	b.TryAcquire(1)
	local := spendShare(r, b, 20)
	if local == 0 {
		t.Fatal("B granted nothing on its share in the outage")
	}
	cutA.Store(false) // the server thaws; A, which granted nothing, is back first
	back := grantsAtOnce(a, 20)
	if redisbucket.BreakerOpen(a) {
		t.Fatalf("A not back on Redis: %s", redisbucket.BreakerState(a))
	}
	t.Logf("B granted %d on its share in the outage; A granted %d on its return", local, back)
	if back > 1 {
		t.Fatalf("A granted %d at once on a key that refilled while frozen, want at most 1", back)
	}
}

// The first process back may hold an old view, from before the fleet's
// queue grew: a later one whose view held the lost queue longer puts what
// the first left out before every reservation still to come. (64
// processes through a kill: the first back had a view from the start, 2 s
// of queue against 5 s, and the rebuilt key's grants went with the lost
// queue's last 2 s of sleepers until the vendor answered 429.) Here A saw
// 1 s of queue, C saw 2 s; A comes back first, then C.
func TestRecoveryLaterReturnLengthensTheLostQueue(t *testing.T) {
	r, m := miniRig(t)
	a, cutA := cutBucket(t, r, m) // 9 left
	c, cutC := cutBucket(t, r, m) // 8 left
	b, err := redisbucket.New(miniClient(t, m), "back", 10, throttle.Per(10, time.Second),
		r.opts(redisbucket.WithCallTimeout(50*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := b.TryAcquire(8); !ok || err != nil {
		t.Fatalf("B's 8: %v %v", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	reserve := func(view *redisbucket.Bucket, at float64) {
		t.Helper()
		wg.Go(func() { b.Acquire(ctx, 10) })
		untilLevel(t, view, at)
	}
	reserve(a, -10) // A's last view: 1 s of queue
	reserve(c, -20) // C's: 2 s
	cutA.Store(true)
	cutC.Store(true)
	// Calls that reach for Redis (a TryAcquire the view refuses does
	// not): both breakers open.
	a.TokensContext(ctx)
	c.TokensContext(ctx)
	if !redisbucket.BreakerOpen(a) || !redisbucket.BreakerOpen(c) {
		t.Fatalf("breakers %s, %s with Redis cut", redisbucket.BreakerState(a), redisbucket.BreakerState(c))
	}
	m.FlushAll() // the server restarted without the key
	start := r.fc.Now()
	back := func(p *redisbucket.Bucket, cut interface{ Store(bool) }) {
		t.Helper()
		cut.Store(false)
		// Until a call of p's reaches Redis: its breaker half-opens by
		// itself once the probe is due.
		for st := p.Stats(); p.Stats().Calls-p.Stats().CallErrors == st.Calls-st.CallErrors; {
			if r.fc.Since(start) > 800*time.Millisecond {
				t.Fatalf("not back on Redis: %+v, %s", p.Stats(), redisbucket.BreakerState(p))
			}
			r.advance(50 * time.Millisecond)
			p.TokensContext(ctx)
		}
	}
	back(a, cutA)
	first := bucketLevel(t, a)
	back(c, cutC)
	since := r.fc.Since(start)
	lv := bucketLevel(t, a)
	want := -20 + 10*since.Seconds()
	t.Logf("level %v after A's return, %v after C's at +%v", first, lv, since)
	if lv > want+1 {
		t.Fatalf("level %v after C's return at +%v, want C's queue refilled since, %v", lv, since, want)
	}
}

// untilLevel waits, by Redis's reading through of, until the level is at
// most at: the reservations of goroutines started before are made.
func untilLevel(t *testing.T, of *redisbucket.Bucket, at float64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); bucketLevel(t, of) > at; {
		if time.Now().After(deadline) {
			t.Fatalf("not reserved: level %v, want at most %v", bucketLevel(t, of), at)
		}
	}
}

// spendShare takes everything b grants, step after step of 100 ms, for
// steps steps, and returns how many it granted.
func spendShare(r *rig, b *redisbucket.Bucket, steps int) int {
	granted := 0
	for range steps {
		r.advance(100 * time.Millisecond)
		for {
			ok, _ := b.TryAcquire(1)
			if !ok {
				break
			}
			granted++
		}
	}
	return granted
}

// grantsAtOnce tries b n times without the clock moving and returns how
// many it granted.
func grantsAtOnce(b *redisbucket.Bucket, n int) int {
	granted := 0
	for range n {
		if ok, _ := b.TryAcquire(1); ok {
			granted++
		}
	}
	return granted
}
