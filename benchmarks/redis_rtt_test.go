package benchmarks

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// The round trips BenchmarkRedisRoundTrips adds with delayProxy (one-way
// delay D per direction; 0 is a direct connection), and the goroutine
// counts. THROTTLE_BENCH_RT_ROUNDS (default 5) sets the alternated rounds
// per cell, THROTTLE_BENCH_RT_MS (default 1000) the length of a timed run,
// THROTTLE_BENCH_RT_EXACT_MS (default 2000) that of an exactness run,
// THROTTLE_BENCH_RT_DELAYS (µs, comma-separated) and THROTTLE_BENCH_RT_G
// the cells, THROTTLE_BENCH_RT_POOL the clients' pool size.
var (
	rtDelays     = []time.Duration{0, 250 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond}
	rtGoroutines = []int{1, 8, 64}
)

// rtRun is one timed run of one library in one cell.
type rtRun struct {
	decisions  float64 // per second
	p50, p99   float64 // decision latency, in PING round trips through the same path
	serverCPU  float64 // µs of server CPU (user+sys) per decision
	calls      float64 // EVALSHAs per decision
	rtt        time.Duration
	admitted   int64 // exactness run: grants
	bound      float64
	exactRunMs float64
}

// BenchmarkRedisRoundTrips compares redisbucket's Bucket.TryAcquire with
// redis_rate's Allow at real round trips: through delayProxy at each delay
// D of rtDelays (a direct connection at 0) and each goroutine count, the
// two libraries alternated round by round (which goes first alternates
// too), on one client each with go-redis's default pool and the options
// redisClient uses. Per run: decisions/s (a limit every request passes and
// both write for, decisionRate), p50 and p99 decision latency in units of
// the PING round trip measured through the same proxy just before the
// run, server CPU per decision (INFO's used_cpu_user+sys, the server being
// this benchmark's own) and script calls per decision. Then an exactness
// run per cell and library at 1,000/s, burst 100, counting the grants
// against rate·T + burst over the run (T from the first call's start to
// the last call's end). It prints one markdown table: medians over the
// rounds with their ranges.
func BenchmarkRedisRoundTrips(b *testing.B) {
	target := redisAddr(b)
	direct := redis.NewClient(&redis.Options{Addr: target, DisableIdentity: true})
	b.Cleanup(func() { direct.Close() })
	rounds := envInt("THROTTLE_BENCH_RT_ROUNDS", 5)
	runFor := time.Duration(envInt("THROTTLE_BENCH_RT_MS", 1000)) * time.Millisecond
	exactFor := time.Duration(envInt("THROTTLE_BENCH_RT_EXACT_MS", 2000)) * time.Millisecond
	delays, gs := rtDelays, rtGoroutines
	if v := os.Getenv("THROTTLE_BENCH_RT_DELAYS"); v != "" {
		delays = nil
		for _, f := range strings.Split(v, ",") {
			var us int
			fmt.Sscan(f, &us)
			delays = append(delays, time.Duration(us)*time.Microsecond)
		}
	}
	if v := os.Getenv("THROTTLE_BENCH_RT_G"); v != "" {
		gs = nil
		for _, f := range strings.Split(v, ",") {
			var g int
			fmt.Sscan(f, &g)
			gs = append(gs, g)
		}
	}
	impls := []string{"throttle", "redis_rate"}
	var out strings.Builder
	fmt.Fprintf(&out, "\n| D | goroutines | PING p50 | ours/s | redis_rate/s | ratio | p50 RTT ours / theirs | p99 RTT ours / theirs | server µs/decision ours / theirs | calls/decision ours | exact: most admitted / bound |\n")
	fmt.Fprintf(&out, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	for range b.N {
		for _, d := range delays {
			addr := target
			if d > 0 {
				addr = startDelayProxy(b, target, d).Addr()
			}
			directRTT := pingP50(b, target)
			viaRTT := pingP50(b, addr)
			b.Logf("D=%v: PING p50 %v direct, %v through the proxy: the proxy adds %v beyond 2D", d, directRTT, viaRTT, viaRTT-directRTT-2*d)
			for _, g := range gs {
				runs := map[string][]rtRun{}
				var ratios, cpuRatios []float64
				for r := range rounds {
					order := impls
					if r%2 == 1 {
						order = []string{impls[1], impls[0]}
					}
					got := map[string]rtRun{}
					for _, impl := range order {
						got[impl] = rtTimed(b, direct, addr, impl, g, runFor)
					}
					for _, impl := range impls {
						runs[impl] = append(runs[impl], got[impl])
					}
					ratios = append(ratios, got["throttle"].decisions/got["redis_rate"].decisions)
					cpuRatios = append(cpuRatios, got["throttle"].serverCPU/got["redis_rate"].serverCPU)
				}
				// Exactness: one run per library per cell (two at g=8).
				exact := map[string][]rtRun{}
				for r := range max(1, min(2, rounds/2)) {
					order := impls
					if r%2 == 1 {
						order = []string{impls[1], impls[0]}
					}
					for _, impl := range order {
						e := rtExact(b, direct, addr, impl, g, exactFor)
						exact[impl] = append(exact[impl], e)
						if float64(e.admitted) > e.bound {
							b.Errorf("D=%v g=%d %s: %d admitted over %.0f ms, bound %.1f: over-admission", d, g, impl, e.admitted, e.exactRunMs, e.bound)
						}
					}
				}
				med := func(impl string, f func(rtRun) float64) (float64, float64, float64) {
					v := make([]float64, 0, len(runs[impl]))
					for _, x := range runs[impl] {
						v = append(v, f(x))
					}
					return medRange(v)
				}
				rtt := func(x rtRun) float64 { return float64(x.rtt.Microseconds()) }
				_, rttLo, rttHi := med("throttle", rtt)
				ours := fmtMed(med("throttle", func(x rtRun) float64 { return x.decisions }))
				theirs := fmtMed(med("redis_rate", func(x rtRun) float64 { return x.decisions }))
				ratio := fmtMed2(medRange(ratios))
				p50 := fmtMed2(med("throttle", func(x rtRun) float64 { return x.p50 })) + " / " + fmtMed2(med("redis_rate", func(x rtRun) float64 { return x.p50 }))
				p99 := fmtMed2(med("throttle", func(x rtRun) float64 { return x.p99 })) + " / " + fmtMed2(med("redis_rate", func(x rtRun) float64 { return x.p99 }))
				cpu := fmtMed1(med("throttle", func(x rtRun) float64 { return x.serverCPU })) + " / " + fmtMed1(med("redis_rate", func(x rtRun) float64 { return x.serverCPU })) +
					" (ratio " + fmtMed2(medRange(cpuRatios)) + ")"
				calls := fmtMed2(med("throttle", func(x rtRun) float64 { return x.calls }))
				var ex []string
				for _, impl := range impls {
					worst := exact[impl][0]
					for _, e := range exact[impl] {
						if float64(e.admitted)-e.bound > float64(worst.admitted)-worst.bound {
							worst = e
						}
					}
					ex = append(ex, fmt.Sprintf("%d / %.0f", worst.admitted, worst.bound))
				}
				fmt.Fprintf(&out, "| %v | %d | %.0f–%.0f µs | %s | %s | %s | %s | %s | %s | %s | %s |\n",
					d, g, rttLo, rttHi, ours, theirs, ratio, p50, p99, cpu, calls, strings.Join(ex, "; "))
			}
		}
	}
	fmt.Print(out.String())
}

// pingP50 returns the median of 200 sequential PINGs to addr.
func pingP50(tb testing.TB, addr string) time.Duration {
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, PoolSize: 1})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		tb.Fatal(err)
	}
	lat := make([]time.Duration, 200)
	for i := range lat {
		t0 := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			tb.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	slices.Sort(lat)
	return lat[len(lat)/2]
}

// rtClient is the client both libraries use in BenchmarkRedisRoundTrips:
// redisClient's options with go-redis's default pool (10 per GOMAXPROCS),
// or THROTTLE_BENCH_RT_POOL connections. The run that makes it closes it,
// so that no run's idle connections weigh on the next.
func rtClient(addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, ContextTimeoutEnabled: true,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		PoolSize: envInt("THROTTLE_BENCH_RT_POOL", 0)})
	return c
}

// rtDecider returns impl's decision on a fresh key, and for ours a count
// of the decisions the failure policy took (a call that timed out), which
// must stay 0. direct deletes the keys when the benchmark ends.
func rtDecider(b *testing.B, direct, c *redis.Client, impl string, capacity, perSecond int64) (decide func() (bool, error), failures func() int64) {
	prefix := benchPrefix(b)
	cleanup(b, direct, prefix)
	ctx := context.Background()
	failures = func() int64 { return 0 }
	switch impl {
	case "throttle":
		bk, err := redisbucket.New(c, "rt", capacity, throttle.Per(perSecond, time.Second),
			redisbucket.WithPrefix(prefix), redisbucket.WithFailurePolicy(redisbucket.FailClosed),
			redisbucket.WithCallTimeout(time.Second))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { bk.Close() })
		decide = func() (bool, error) { return bk.TryAcquire(1) }
		failures = func() int64 { return bk.Stats().FailureDecisions }
	case "redis_rate":
		lim := redis_rate.NewLimiter(c)
		limit := redis_rate.Limit{Rate: int(perSecond), Burst: int(capacity), Period: time.Second}
		decide = func() (bool, error) {
			res, err := lim.Allow(ctx, prefix+"rt", limit)
			if err != nil {
				return false, err
			}
			return res.Allowed > 0, nil
		}
	}
	return decide, failures
}

// rtTimed runs g goroutines deciding in a closed loop through addr for
// about d after a warm-up of d/5, and measures the decisions that start
// after the warm-up.
func rtTimed(b *testing.B, direct *redis.Client, addr, impl string, g int, d time.Duration) rtRun {
	c := rtClient(addr)
	defer c.Close()
	decide, failures := rtDecider(b, direct, c, impl, decisionRate, decisionRate)
	if _, err := decide(); err != nil {
		b.Fatal(err)
	}
	rtt := pingP50(b, addr)
	var measuring, stop atomic.Bool
	lat := make([][]time.Duration, g)
	var wg sync.WaitGroup
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				on := measuring.Load()
				t0 := time.Now()
				ok, err := decide()
				if on && !stop.Load() {
					lat[w] = append(lat[w], time.Since(t0))
				}
				if err != nil || !ok {
					b.Errorf("%s decision: %v %v", impl, ok, err)
					return
				}
			}
		}()
	}
	time.Sleep(d / 5)
	before := readServerStats(b, direct)
	start := time.Now()
	measuring.Store(true)
	time.Sleep(d)
	stop.Store(true)
	elapsed := time.Since(start)
	after := readServerStats(b, direct)
	wg.Wait()
	if n := failures(); n > 0 {
		b.Errorf("%s g=%d via %s: %d decisions by the failure policy (calls timed out)", impl, g, addr, n)
	}
	all := slices.Concat(lat...)
	if len(all) == 0 {
		b.Fatalf("%s: no decision measured", impl)
	}
	slices.Sort(all)
	n := float64(len(all))
	return rtRun{
		decisions: n / elapsed.Seconds(),
		p50:       float64(all[len(all)/2]) / float64(rtt),
		p99:       float64(all[len(all)*99/100]) / float64(rtt),
		serverCPU: (after.cpu - before.cpu) * 1e6 / n,
		calls:     float64(after.calls["evalsha"]-before.calls["evalsha"]) / n,
		rtt:       rtt,
	}
}

// rtExact runs g goroutines on a limit of 1,000/s, burst 100, for about d
// and counts the grants: an exact limiter grants at most rate·T + burst,
// T from the first call's start to the last call's end.
func rtExact(b *testing.B, direct *redis.Client, addr, impl string, g int, d time.Duration) rtRun {
	const capacity, perSecond = 100, 1000
	c := rtClient(addr)
	defer c.Close()
	decide, failures := rtDecider(b, direct, c, impl, capacity, perSecond)
	// Load the script on a key of its own: the measured key starts full.
	if load, _ := rtDecider(b, direct, c, impl, capacity, perSecond); true {
		if _, err := load(); err != nil {
			b.Fatal(err)
		}
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	var last atomic.Int64
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				ok, err := decide()
				if err != nil {
					b.Errorf("%s decision: %v", impl, err)
					return
				}
				if ok {
					granted.Add(1)
				}
			}
			end := int64(time.Since(start))
			for {
				l := last.Load()
				if end <= l || last.CompareAndSwap(l, end) {
					break
				}
			}
		}()
	}
	wg.Wait()
	if n := failures(); n > 0 {
		b.Errorf("%s g=%d via %s: %d decisions by the failure policy (calls timed out)", impl, g, addr, n)
	}
	T := time.Duration(last.Load())
	return rtRun{admitted: granted.Load(), bound: capacity + perSecond*T.Seconds(), exactRunMs: float64(T.Milliseconds())}
}

// medRange returns the median, lowest and highest of v.
func medRange(v []float64) (float64, float64, float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}

func fmtMed(m, lo, hi float64) string {
	return fmt.Sprintf("%s (%s–%s)", thousands(m), thousands(lo), thousands(hi))
}
func fmtMed1(m, lo, hi float64) string { return fmt.Sprintf("%.1f (%.1f–%.1f)", m, lo, hi) }
func fmtMed2(m, lo, hi float64) string { return fmt.Sprintf("%.2f (%.2f–%.2f)", m, lo, hi) }

// thousands formats x rounded, with commas.
func thousands(x float64) string {
	s := fmt.Sprintf("%.0f", x)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
