package redisbucket_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// At a steady high demand, leases serve most decisions without a call.
func TestLeaseCutsCalls(t *testing.T) {
	r := newRig(t)
	b := r.bucket("lease", 1000, throttle.Per(1000, time.Second), redisbucket.WithLease(redisbucket.Lease{Hold: time.Second, MaxBatch: 50}))
	const n = 2000
	granted := 0
	for range n {
		r.advance(time.Millisecond) // 1000/s: the whole rate, from one process
		if ok, err := b.TryAcquire(1); err != nil {
			t.Fatal(err)
		} else if ok {
			granted++
		}
	}
	s := b.Stats()
	t.Logf("%d of %d granted, %d calls, %d served from leases", granted, n, s.Calls, s.LeaseServed)
	if granted != n {
		t.Fatalf("refused %d requests at exactly the rate", n-granted)
	}
	if s.Calls*10 > n {
		t.Fatalf("%d calls for %d decisions: less than 10x fewer", s.Calls, n)
	}
}

// Unused leased tokens go back to Redis after Hold, and Close returns the
// rest; the server's level then equals that of a bucket that served the
// same grants directly.
func TestLeaseReturnsUnused(t *testing.T) {
	r := newRig(t)
	b := r.bucket("ret", 100, throttle.Per(0, time.Hour), redisbucket.WithLease(redisbucket.Lease{Hold: time.Second, MaxBatch: 40}))
	returned := redisbucket.LeaseReturned(b)
	for range 20 {
		if ok, _ := b.TryAcquire(1); !ok {
			t.Fatal("refused")
		}
	}
	calls := b.Stats().Calls
	if got := b.Tokens(); got >= 80 {
		t.Fatalf("server level %v: nothing leased beyond the grants", got)
	}
	r.advance(time.Second)
	<-returned
	if got := b.Tokens(); got != 80 {
		t.Fatalf("server level %v after the hold, want 80", got)
	}
	if b.Stats().Calls <= calls {
		t.Fatal("no return call")
	}
	// A new lease, then Close returns it.
	b.TryAcquire(1)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := b.Tokens(); got != 79 {
		t.Fatalf("server level %v after Close, want 79", got)
	}
	if _, err := b.TryAcquire(1); err == nil {
		t.Fatal("closed bucket still serves")
	}
}

// Leased tokens are not used after Hold, even when they could not be
// returned (Redis is down here, and the policy is FailClosed).
func TestLeaseNeverUsesExpiredTokens(t *testing.T) {
	r, m := miniRig(t)
	b, err := redisbucket.New(miniClient(t, m), "exp", 10, throttle.Per(0, time.Second), append(r.opts(),
		redisbucket.WithFailurePolicy(redisbucket.FailClosed),
		redisbucket.WithLease(redisbucket.Lease{Hold: time.Second, MaxBatch: 10, Share: 1}))...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// The demand estimate grows with each request: leases of 1, 2 and 4
	// tokens serve these 4 requests and leave 3 held.
	for range 4 {
		if ok, _ := b.TryAcquire(1); !ok {
			t.Fatal("refused")
		}
	}
	if got := b.Tokens(); got != 3 {
		t.Fatalf("server level %v, want 3", got)
	}
	m.SetError("LOADING")
	r.advance(time.Second - time.Microsecond)
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("a held token was not served within Hold")
	}
	r.advance(time.Microsecond)
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("a held token was served after Hold")
	}
}

// A refusal from Redis is repeated locally, without calls, until the wait
// it returned (doubled for each consecutive refusal) has passed.
func TestLeaseDenialCached(t *testing.T) {
	r := newRig(t)
	b := r.bucket("deny", 5, throttle.Per(10, time.Second), redisbucket.WithLease(redisbucket.Lease{Hold: time.Second, MaxBatch: 5, Share: 1}))
	for b.Tokens() > 0 || b.Stats().Calls == 0 {
		b.TryAcquire(1)
	}
	for {
		if ok, _ := b.TryAcquire(1); !ok {
			break
		}
	}
	calls := b.Stats().Calls
	for range 50 {
		if ok, _ := b.TryAcquire(1); ok {
			t.Fatal("granted from an empty bucket")
		}
	}
	if got := b.Stats().Calls; got != calls {
		t.Fatalf("%d calls for cached refusals", got-calls)
	}
	// Consecutive refusals back off, at most to a quarter of Hold.
	r.advance(250 * time.Millisecond)
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("refused after the longest wait")
	}
}

// Acquire in lease mode waits out the refusal (or the pause after a short
// lease, at most a quarter of Hold) and gets the token.
func TestLeaseAcquire(t *testing.T) {
	r := newRig(t)
	b := r.bucket("lacq", 2, throttle.Per(10, time.Second), redisbucket.WithLease(redisbucket.Lease{Hold: time.Second, MaxBatch: 2}))
	ctx := context.Background()
	for range 2 {
		if err := b.Acquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- b.Acquire(ctx, 1) }()
	start := r.fc.Now()
	for {
		// Wait until the waiter sleeps again, or is done.
		bctx, cancel := context.WithCancel(ctx)
		slept := make(chan error, 1)
		go func() { slept <- r.fc.BlockUntilContext(bctx, 1) }()
		select {
		case err := <-done:
			cancel()
			<-slept
			if err != nil {
				t.Fatal(err)
			}
			if w := r.fc.Since(start); w < 100*time.Millisecond || w > 250*time.Millisecond {
				t.Fatalf("granted after %v, want between the token's 100ms and Hold/4", w)
			}
			return
		case err := <-slept:
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		if r.fc.Since(start) > time.Second {
			t.Fatal("not granted within Hold")
		}
		r.advance(50 * time.Millisecond)
	}
}

// Several leasing processes at random demand never admit more than
// capacity + rate x (elapsed + Hold) in total, and within every window of
// the trace no more than capacity + rate x (window + Hold).
func TestLeaseNoOverAdmission(t *testing.T) {
	r := newRig(t)
	const capacity, perSec = 50, 200
	hold := 500 * time.Millisecond
	var bs []*redisbucket.Bucket
	for range 4 {
		bs = append(bs, r.bucket("multi", capacity, throttle.Per(perSec, time.Second),
			redisbucket.WithLease(redisbucket.Lease{Hold: hold, MaxBatch: 10})))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var grants []time.Duration
	start := r.fc.Now()
	for range 4000 {
		r.advance(time.Duration(rng.ExpFloat64() * float64(time.Second) / 300)) // 150% of the rate
		b := bs[rng.IntN(len(bs))]
		if ok, err := b.TryAcquire(1); err != nil {
			t.Fatal(err)
		} else if ok {
			grants = append(grants, r.fc.Since(start))
		}
	}
	elapsed := r.fc.Since(start)
	if max := capacity + int(perSec*(elapsed+hold).Seconds()); len(grants) > max {
		t.Fatalf("%d grants in %v: over capacity + rate x (elapsed + hold) = %d", len(grants), elapsed, max)
	}
	for _, w := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		j := 0
		for i := range grants {
			for grants[i]-grants[j] >= w {
				j++
			}
			if n, max := i-j+1, capacity+int(perSec*(w+hold).Seconds()); n > max {
				t.Fatalf("%d grants in a %v window, bound %d", n, w, max)
			}
		}
	}
	t.Logf("%d grants of 4000 requests in %v (rate x elapsed = %.0f)", len(grants), elapsed, perSec*elapsed.Seconds())
}
