package redisbucket_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
	"github.com/throttlekit/throttle/redisbucket/internal/redistest"
)

// A probe cut short by its caller's context (cancelled, or a deadline
// shorter than the call) is neither a success nor a failure: the breaker
// must probe again, not stay "probing" forever. Direct, peek and lease
// paths, on the fake clock.
func TestBreakerCancelledProbeDoesNotStick(t *testing.T) {
	for _, path := range []string{"decide", "peek", "lease"} {
		t.Run(path, func(t *testing.T) {
			r, m := miniRig(t)
			var opts []redisbucket.Option
			if path == "lease" {
				opts = append(opts, redisbucket.WithLease(redisbucket.Lease{Hold: time.Second, MaxBatch: 1}))
			}
			b, err := redisbucket.New(miniClient(t, m), "stuck", 10, throttle.Per(10, time.Second), append(r.opts(opts...),
				redisbucket.WithFailurePolicy(redisbucket.FailClosed), redisbucket.WithProbeBackoff(100*time.Millisecond, 100*time.Millisecond))...)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			m.SetError("LOADING")
			b.TryAcquire(1) // opens the breaker
			if !redisbucket.BreakerOpen(b) {
				t.Fatal("breaker closed after a failure")
			}
			m.SetError("")
			r.advance(200 * time.Millisecond)
			cancelled, cancel := context.WithCancel(context.Background())
			cancel()
			calls := b.Stats().Calls
			var cerr error
			if path == "peek" {
				_, cerr = b.WaitTimeContext(cancelled, 1)
			} else {
				_, cerr = b.TryAcquireContext(cancelled, 1)
			}
			if cerr == nil || b.Stats().Calls != calls+1 {
				t.Fatalf("the probe with a cancelled context: %v, %d calls", cerr, b.Stats().Calls-calls)
			}
			// The next decision probes again, and Redis is healthy.
			if ok, err := b.TryAcquire(1); !ok || err != nil {
				t.Fatalf("after the cancelled probe: %v %v", ok, err)
			}
			if redisbucket.BreakerOpen(b) {
				t.Fatal("breaker stuck open after a cancelled probe")
			}
		})
	}
}

// Property: no schedule of faults (kill, SIGSTOP, restart) and of calls cut
// short by their callers (cancelled, deadlines shorter than the call) can
// leave a breaker stuck: once the server is healthy again, every breaker
// is closed within the probe backoff (plus its jitter), on direct, peek,
// Acquire and lease paths and every policy. Real server, real time, many
// random schedules.
func TestBreakerNeverStuckProperty(t *testing.T) {
	srv := redistest.StartServer(t)
	redistest.Announce(t, "redis-server started by the test at "+srv.Addr+" (killed, frozen and restarted)")
	// PoolSize: go-redis stops dialing for a second after PoolSize failed
	// dials (counted over the client's life); a large pool keeps that
	// rare here, so that the bound below is mostly the breaker's own.
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, DisableIdentity: true, MaxRetries: -1, DialerRetries: 1, PoolSize: 1000,
		DialTimeout: 50 * time.Millisecond, ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	const probeMax, callTimeout = 40 * time.Millisecond, 30 * time.Millisecond
	slow := &timedOutCalls{timeout: callTimeout, n: map[string]int64{}}
	c.AddHook(slow)
	common := []redisbucket.Option{redisbucket.WithPrefix("prop:"), redisbucket.WithCallTimeout(callTimeout),
		redisbucket.WithProbeBackoff(5*time.Millisecond, probeMax)}
	type subject struct {
		name string
		b    *redisbucket.Bucket
		l    *redisbucket.Limiter
	}
	var subs []subject
	for _, p := range []struct {
		name string
		p    redisbucket.FailurePolicy
	}{{"local", redisbucket.FailLocal()}, {"closed", redisbucket.FailClosed}, {"open", redisbucket.FailOpen}} {
		for _, lease := range []bool{false, true} {
			opts := append(common[:len(common):len(common)], redisbucket.WithFailurePolicy(p.p))
			name := p.name
			if lease {
				opts = append(opts, redisbucket.WithLease(redisbucket.Lease{Hold: 50 * time.Millisecond}))
				name += "+lease"
			}
			b, err := redisbucket.New(c, name, 100, throttle.Per(2000, time.Second), opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			subs = append(subs, subject{name: name, b: b})
		}
		l, err := redisbucket.NewLimiter(c, "lim-"+p.name, rpmTPM, append(common[:len(common):len(common)], redisbucket.WithFailurePolicy(p.p))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		subs = append(subs, subject{name: "lim-" + p.name, l: l})
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	// callOnce makes one random call on s with a random context: cancelled,
	// a deadline shorter than the call timeout, or a longer one.
	callOnce := func(rng *rand.Rand, s subject) {
		var ctx context.Context
		var cancel context.CancelFunc
		switch rng.IntN(3) {
		case 0:
			ctx, cancel = context.WithCancel(context.Background())
			cancel()
		case 1:
			ctx, cancel = context.WithTimeout(context.Background(), time.Duration(rng.IntN(20_000))*time.Microsecond)
		default:
			ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
		}
		defer cancel()
		op := rng.IntN(4)
		if s.l != nil {
			switch op {
			case 0:
				s.l.TryAcquireContext(ctx, 1, 1)
			case 1:
				s.l.WaitTimeContext(ctx, 1, 1)
			case 2:
				s.l.Tokens(ctx)
			default:
				if p, err := s.l.Acquire(ctx, 1, 1); err == nil {
					p.(*redisbucket.Permit).SettleContext(ctx, 1, 1)
				}
			}
			return
		}
		switch op {
		case 0:
			s.b.TryAcquireContext(ctx, 1)
		case 1:
			s.b.WaitTimeContext(ctx, 1)
		case 2:
			s.b.TokensContext(ctx)
		default:
			s.b.Acquire(ctx, 1)
		}
	}
	// open reports whether s's breaker is open, and whether the error that
	// holds it is a failed dial.
	open := func(s subject) (open, dial bool) {
		cause := redisbucket.BreakerCause
		if s.l != nil {
			cause = func(*redisbucket.Bucket) error { return redisbucket.LimiterBreakerCause(s.l) }
		}
		err := cause(s.b)
		return err != nil, err != nil && strings.Contains(err.Error(), "dial tcp")
	}
	const schedules = 24
	// Within the probe backoff of the server being healthy (plus its
	// jitter and a call), with decisions going on, every breaker is
	// closed.
	// A probe in flight as the server heals may still time out and
	// schedule the next one a backoff later. So may a probe sent to the
	// healthy server, when the machine is loaded: the server, or this
	// process, is not scheduled within the call timeout, the call fails
	// and the breaker rightly waits a backoff more; each call sent after
	// the server was healthy and failed by the call timeout (timedOutCalls)
	// allows one such round more.
	// go-redis adds a delay of its own: after PoolSize failed dials a
	// client stops dialing and retries once a second, answering with
	// the last dial error meanwhile; a breaker held by that is allowed
	// dialRetry more. The stall meter adds the time this process was
	// not run at all. slack is what is left, for the polling: at load
	// averages of 13-15 (8 busy loops on 2 cores, and other builds)
	// under -race, over 1728 breaker recoveries, every breaker closed
	// at least 45 ms before its allowance without slack.
	const round = callTimeout + probeMax*6/5
	const slack = 20 * time.Millisecond
	const dialRetry = time.Second
	dialDelayed := 0
	worst := -time.Hour // the most a breaker took past its allowance without slack
	for i := range schedules {
		// Faults and callers, concurrently, for a random while.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(100*i+g+2)))
				for {
					select {
					case <-stop:
						return
					default:
					}
					callOnce(rng, subs[rng.IntN(len(subs))])
				}
			}()
		}
		var faults []string
		for range 1 + rng.IntN(3) {
			time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
			switch rng.IntN(3) {
			case 0:
				faults = append(faults, "kill+restart")
				srv.Stop()
				time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
				srv.Restart()
			case 1:
				faults = append(faults, "freeze")
				srv.Freeze()
				time.Sleep(time.Duration(20+rng.IntN(80)) * time.Millisecond)
				srv.Thaw()
			default:
				faults = append(faults, "none")
			}
		}
		healthy := time.Now()
		slow.reset(healthy)
		stall := startStallMeter()
		// Each breaker is checked by its own goroutine from the instant the
		// server is healthy, so that neither the callers finishing nor
		// another breaker's check is counted against it.
		type check struct {
			took        time.Duration
			failed      int64
			stalled     time.Duration
			stuck, dial bool
		}
		checks := make([]check, len(subs))
		var cw sync.WaitGroup
		for k, s := range subs {
			cw.Add(1)
			go func() {
				defer cw.Done()
				c := &checks[k]
				for {
					isOpen, dial := open(s)
					c.failed = slow.count(s.name)
					c.stalled = stall.total()
					c.took = time.Since(healthy)
					if !isOpen {
						return
					}
					c.dial = dial
					if c.took > round+slack+time.Duration(c.failed)*round+c.stalled+dialRetry || c.took > 10*time.Second {
						c.stuck = true
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					if s.l != nil {
						s.l.Tokens(ctx)
					} else {
						s.b.TokensContext(ctx)
					}
					cancel()
					time.Sleep(time.Millisecond)
				}
			}()
		}
		// Callers keep cutting calls short after the server is back.
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		close(stop)
		wg.Wait()
		cw.Wait()
		stall.stop()
		for k, s := range subs {
			c := checks[k]
			bound := round + slack + time.Duration(c.failed)*round + c.stalled
			if !c.dial {
				worst = max(worst, c.took-(bound-slack))
			}
			if c.stuck {
				t.Fatalf("schedule %d (%v): %s still on its failure policy %v after the server was healthy (%d calls timed out since); stats %s",
					i, faults, s.name, c.took, c.failed, stats(s.b, s.l))
			}
			if c.took > bound {
				if !c.dial {
					t.Fatalf("schedule %d (%v): %s back on Redis %v after the server was healthy, bound %v (%d calls timed out since); stats %s",
						i, faults, s.name, c.took, bound, c.failed, stats(s.b, s.l))
				}
				dialDelayed++
			}
		}
	}
	t.Logf("%d breakers held past the probe backoff by go-redis's dial retry", dialDelayed)
	t.Logf("the slowest breaker closed %v after its allowance (slack %v)", worst, slack)
	t.Logf("%d schedules, every breaker back on Redis each time", schedules)
}

// timedOutCalls is a go-redis hook that counts, per limiter id, the calls sent
// since a given instant that took the call timeout or longer: sent to a
// healthy server and not answered in time (the engine gave up on them at
// the call timeout, whatever go-redis returned later), which on a loaded
// machine is the scheduler's doing, not the breaker's.
type timedOutCalls struct {
	timeout time.Duration
	mu      sync.Mutex
	since   time.Time
	n       map[string]int64
}

func (h *timedOutCalls) reset(since time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.since = since
	clear(h.n)
}

func (h *timedOutCalls) count(id string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[id]
}

func (h *timedOutCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *timedOutCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *timedOutCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		if time.Since(start) < h.timeout {
			return err
		}
		for _, a := range cmd.Args() {
			// The state key, prefix + "{" + id + "}".
			k, ok := a.(string)
			if _, id, found := strings.Cut(k, "{"); ok && found {
				id, _, _ = strings.Cut(id, "}")
				h.mu.Lock()
				if !start.Before(h.since) {
					h.n[id]++
				}
				h.mu.Unlock()
				break
			}
		}
		return err
	}
}

// stallMeter measures how long this process was kept from running: a
// goroutine asks to wake every millisecond and adds up how much later than
// that it woke, past a millisecond of grace. On a loaded machine the
// scheduler stops every goroutine of the process for such stretches at
// once, the breakers' included.
type stallMeter struct {
	stalled atomic.Int64
	done    chan struct{}
	wg      sync.WaitGroup
}

func startStallMeter() *stallMeter {
	m := &stallMeter{done: make(chan struct{})}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-m.done:
				return
			case now := <-t.C:
				if late := time.Since(last) - 2*time.Millisecond; late > 0 {
					m.stalled.Add(int64(late))
				}
				last = now
			}
		}
	}()
	return m
}

func (m *stallMeter) total() time.Duration { return time.Duration(m.stalled.Load()) }

func (m *stallMeter) stop() {
	close(m.done)
	m.wg.Wait()
}

func stats(b *redisbucket.Bucket, l *redisbucket.Limiter) string {
	if l != nil {
		return fmt.Sprintf("%+v", l.Stats())
	}
	return fmt.Sprintf("%+v %s", b.Stats(), redisbucket.BreakerState(b))
}
