package benchmarks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// redisClient returns a client for the benchmarks' Redis (redisAddr).
func redisClient(b *testing.B) *redis.Client {
	addr := redisAddr(b)
	// ContextTimeoutEnabled, as redisbucket recommends: without it each of
	// our calls runs in a goroutine of its own to keep its deadline.
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, PoolSize: 16, ContextTimeoutEnabled: true,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		b.Fatalf("no Redis at %s: %v", addr, err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func benchPrefix(b *testing.B) string {
	return fmt.Sprintf("thrbench:%d:", rand.Uint64())
}

// cleanup deletes the benchmark's keys.
func cleanup(b *testing.B, c *redis.Client, prefix string) {
	b.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
}

// decisionRate is the limit of BenchmarkRedisDecision: high enough that
// every request passes, low enough that both implementations write on
// every call. redis_rate keeps its time in float seconds since the epoch
// (about 0.24 µs apart at today's dates): at 2^30/s its 1 ns step is lost
// and it reads without writing, a GET and no SET. At 10^6/s its step is
// 1 µs, and it writes on every call, as we do.
const decisionRate = 1_000_000

// noopScript answers like a grant and runs no command: the cost of a
// script call itself (BenchmarkRedisDecision's noop_script).
var noopScript = redis.NewScript("return {1, 0, 0, 0}")

// commandsScript runs the three commands every token bucket on the
// server's clock and one key needs, TIME, GET and SET ... PXAT, and no
// logic: the ceiling of any such script (BenchmarkRedisDecision's
// commands_only). setGetScript is the ceiling of a design that guesses the
// stored state and writes it with SET ... GET, two commands
// (commands_setget).
var (
	commandsScript = redis.NewScript(`local t = redis.call('TIME')
local raw = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[5], 'PXAT', t[1] * 1000 + 5000)
return {1, 0, t[1], 0}`)
	setGetScript = redis.NewScript(`local t = redis.call('TIME')
local raw = redis.call('SET', KEYS[1], ARGV[5], 'PXAT', t[1] * 1000 + 5000, 'GET')
return {1, 0, t[1], 0}`)
)

// BenchmarkRedisDecision measures one decision through Redis: our Bucket's
// TryAcquire against redis_rate's Allow (GCRA, also one Lua script), on the
// same server, with a limit both must write for (decisionRate), from 1 and
// from 8 goroutines, alternating the two at each goroutine count, and the
// floor both stand on: noop_script, a script call with our arguments that
// runs no command (writes/decision 0), and two ceilings: commands_only,
// the TIME, GET and SET every design on the server's clock and one key
// runs, without logic, and commands_setget, TIME and SET ... GET.
// Reported: decisions/s, p50/p99 latency, and from the server's INFO:
// writes/decision (SET, HSET and the like run by the script; 1 when both
// write, below 1 when one call decides several), calls/decision (EVALSHAs;
// below 1 when our Bucket coalesces concurrent decisions into one call),
// script-µs/decision (the EVALSHAs' own time, per decision) and
// server-cpu-µs/decision (the server process's user+sys CPU, networking
// included), and client-cpu-µs/decision (this process's, the loop's own
// clock reads included, the same for both).
func BenchmarkRedisDecision(b *testing.B) {
	for _, g := range []int{1, 8} {
		for _, impl := range []string{"throttle", "redis_rate", "noop_script", "commands_only", "commands_setget"} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", impl, g), func(b *testing.B) {
				c := redisClient(b)
				prefix := benchPrefix(b)
				cleanup(b, c, prefix)
				ctx := context.Background()
				var decide func() (bool, error)
				switch impl {
				case "throttle":
					bk, err := redisbucket.New(c, "bench", decisionRate, throttle.Per(decisionRate, time.Second),
						redisbucket.WithPrefix(prefix), redisbucket.WithFailurePolicy(redisbucket.FailClosed),
						redisbucket.WithCallTimeout(time.Second))
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { bk.Close() })
					decide = func() (bool, error) { return bk.TryAcquire(1) }
				case "noop_script":
					// The floor both pay: EVALSHA with our arguments, no
					// command run, a 4-value integer reply, on the same client.
					key := []string{prefix + "{bench}"}
					decide = func() (bool, error) {
						v, err := noopScript.Run(ctx, c, key, "1000000", "1000000", "1000000", 1, "1764590000000000 999999").Int64Slice()
						return err == nil && v[0] == 1, err
					}
				case "commands_only", "commands_setget":
					// The ceilings: the commands with our arguments, no logic.
					s := commandsScript
					if impl == "commands_setget" {
						s = setGetScript
					}
					key := []string{prefix + "{bench}"}
					decide = func() (bool, error) {
						v, err := s.Run(ctx, c, key, "1000000", "1000000", "1000000", 1, "1764590000000000 999999").Int64Slice()
						return err == nil && v[0] == 1, err
					}
				case "redis_rate":
					lim := redis_rate.NewLimiter(c)
					limit := redis_rate.Limit{Rate: decisionRate, Burst: decisionRate, Period: time.Second}
					decide = func() (bool, error) {
						res, err := lim.Allow(ctx, prefix+"bench", limit)
						if err != nil {
							return false, err
						}
						return res.Allowed > 0, nil
					}
				}
				if _, err := decide(); err != nil { // loads the script
					b.Fatal(err)
				}
				lat := make([][]time.Duration, g)
				var wg sync.WaitGroup
				before := readServerStats(b, c)
				u0 := readUsage(b)
				b.ResetTimer()
				start := time.Now()
				for w := range g {
					n := b.N / g
					if w < b.N%g {
						n++
					}
					lat[w] = make([]time.Duration, 0, n)
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range n {
							t0 := time.Now()
							ok, err := decide()
							lat[w] = append(lat[w], time.Since(t0))
							if err != nil || !ok {
								b.Errorf("decision: %v %v", ok, err)
								return
							}
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				u1 := readUsage(b)
				after := readServerStats(b, c)
				all := slices.Concat(lat...)
				slices.Sort(all)
				n := float64(b.N)
				var writes int64
				for _, cmd := range []string{"set", "hset", "hmset", "pexpireat", "pexpire", "expire", "del"} {
					writes += after.calls[cmd] - before.calls[cmd]
				}
				evals := after.calls["evalsha"] - before.calls["evalsha"]
				b.ReportMetric(n/elapsed.Seconds(), "decisions/s")
				b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(writes)/n, "writes/decision")
				b.ReportMetric(float64(evals)/n, "calls/decision")
				b.ReportMetric(float64(after.usec["evalsha"]-before.usec["evalsha"])/n, "script-µs/decision")
				b.ReportMetric((after.cpu-before.cpu)*1e6/n, "server-cpu-µs/decision")
				b.ReportMetric(float64((u1.cpu-u0.cpu).Microseconds())/n, "client-cpu-µs/decision")
			})
		}
	}
}

// Lease-mode scenario: 8 workers, each a separate Bucket with its own
// connection pool (as separate processes would be), in lease mode with the
// default Lease (Hold 1 s, MaxBatch capacity/8, Share 2), share a limit of
// 1000 tokens/s with capacity 100. Each receives Poisson arrivals of cost 1
// at demand/8 of the limit for leaseRun of real time and calls TryAcquire.
// THROTTLE_BENCH_LEASE_CAP and THROTTLE_BENCH_LEASE_RUN_MS change the
// capacity and the run length.
var (
	leaseWorkers  = 8
	leaseRate     = 1000.0 // tokens per second
	leaseCapacity = int64(envInt("THROTTLE_BENCH_LEASE_CAP", 100))
	leaseHold     = time.Second
	leaseRun      = time.Duration(envInt("THROTTLE_BENCH_LEASE_RUN_MS", 4000)) * time.Millisecond
)

func envInt(k string, d int) int {
	var v int
	if _, err := fmt.Sscan(os.Getenv(k), &v); err != nil || v <= 0 {
		return d
	}
	return v
}

// BenchmarkRedisLease runs the lease scenario at 50%, 80% and 150% of the
// limit and reports:
//   - calls/decision: script calls (leases, returns, refusals) per decision;
//     without lease mode it is 1.
//   - over-admitted: the most grants in excess of the bound
//     capacity + rate x (window + Hold) over any window of 10 ms, 100 ms or
//     1 s (0 is the target), and over-no-hold: the same against
//     capacity + rate x window.
//   - denied-%: requests refused; ideal-denied-%: requests an exact shared
//     bucket (the core throttle.Bucket) refuses on the same arrival trace;
//     false-delayed-% = denied-% - ideal-denied-% (at least 0).
func BenchmarkRedisLease(b *testing.B) {
	for _, demand := range []float64{0.5, 0.8, 1.5} {
		b.Run(fmt.Sprintf("demand=%.0f%%", demand*100), func(b *testing.B) {
			c := redisClient(b)
			prefix := benchPrefix(b)
			cleanup(b, c, prefix)
			var m leaseMetrics
			for i := range b.N {
				m.add(runLease(b, c.Options().Addr, fmt.Sprintf("%slease%d:", prefix, i), demand))
			}
			n := float64(b.N)
			b.ReportMetric(m.calls/m.decisions, "calls/decision")
			b.ReportMetric(m.over, "over-admitted")
			b.ReportMetric(m.overNoHold, "over-no-hold")
			b.ReportMetric(100*m.denied/m.decisions, "denied-%")
			b.ReportMetric(100*m.idealDenied/m.decisions, "ideal-denied-%")
			b.ReportMetric(max(0, 100*(m.denied-m.idealDenied)/m.decisions), "false-delayed-%")
			b.ReportMetric(m.decisions/n, "requests/run")
		})
	}
}

type leaseMetrics struct {
	calls, decisions, denied, idealDenied float64
	over, overNoHold                      float64
}

func (m *leaseMetrics) add(o leaseMetrics) {
	m.calls += o.calls
	m.decisions += o.decisions
	m.denied += o.denied
	m.idealDenied += o.idealDenied
	m.over = max(m.over, o.over)
	m.overNoHold = max(m.overNoHold, o.overNoHold)
}

func runLease(b *testing.B, addr, prefix string, demand float64) leaseMetrics {
	type req struct {
		at time.Duration
		ok bool
	}
	reqs := make([][]req, leaseWorkers)
	buckets := make([]*redisbucket.Bucket, leaseWorkers)
	clients := make([]*redis.Client, leaseWorkers)
	for w := range leaseWorkers {
		clients[w] = redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
		bk, err := redisbucket.New(clients[w], "shared", leaseCapacity, throttle.Per(int64(leaseRate), time.Second),
			redisbucket.WithPrefix(prefix), redisbucket.WithFailurePolicy(redisbucket.FailClosed),
			redisbucket.WithCallTimeout(time.Second), redisbucket.WithLease(redisbucket.Lease{Hold: leaseHold}))
		if err != nil {
			b.Fatal(err)
		}
		buckets[w] = bk
	}
	start := time.Now()
	var wg sync.WaitGroup
	perWorker := demand * leaseRate / float64(leaseWorkers)
	for w := range leaseWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			next := time.Duration(0)
			for {
				next += time.Duration(rng.ExpFloat64() / perWorker * float64(time.Second))
				if next >= leaseRun {
					return
				}
				if d := next - time.Since(start); d > 0 {
					time.Sleep(d)
				}
				at := time.Since(start)
				ok, err := buckets[w].TryAcquire(1)
				if err != nil {
					b.Error(err)
					return
				}
				reqs[w] = append(reqs[w], req{at, ok})
			}
		}()
	}
	wg.Wait()
	var m leaseMetrics
	for w, bk := range buckets {
		if err := bk.Close(); err != nil {
			b.Error(err)
		}
		s := bk.Stats()
		m.calls += float64(s.Calls)
		if s.FailureDecisions > 0 {
			b.Errorf("worker %d: %d decisions by the failure policy", w, s.FailureDecisions)
		}
		clients[w].Close()
	}
	all := slices.Concat(reqs...)
	slices.SortFunc(all, func(x, y req) int { return int(x.at - y.at) })
	var grants []time.Duration
	ideal := newIdeal()
	for _, r := range all {
		m.decisions++
		if !r.ok {
			m.denied++
		} else {
			grants = append(grants, r.at)
		}
		if !ideal.try(r.at) {
			m.idealDenied++
		}
	}
	for _, win := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		j := 0
		for i := range grants {
			for grants[i]-grants[j] >= win {
				j++
			}
			n := float64(i - j + 1)
			m.overNoHold = max(m.overNoHold, n-(float64(leaseCapacity)+leaseRate*win.Seconds()))
			m.over = max(m.over, n-(float64(leaseCapacity)+leaseRate*(win+leaseHold).Seconds()))
		}
	}
	return m
}

// ideal is the exact shared bucket the lease scenario is compared with.
type ideal struct {
	fc *clockwork.FakeClock
	b  *throttle.Bucket
	t0 time.Time
}

func newIdeal() *ideal {
	fc := clockwork.NewFakeClock()
	b, _ := throttle.New(leaseCapacity, throttle.Per(int64(leaseRate), time.Second), throttle.WithClock(fc))
	return &ideal{fc: fc, b: b, t0: fc.Now()}
}

func (i *ideal) try(at time.Duration) bool {
	if d := i.t0.Add(at).Sub(i.fc.Now()); d > 0 {
		i.fc.Advance(d)
	}
	ok, _ := i.b.TryAcquire(1)
	return ok
}
