package benchmarks

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"golang.org/x/time/rate"
)

// Many goroutines block on one slow limiter: 1,000 waiters at 2,000
// grants/s, capacity 1, on the real clock.
const (
	waitersN     = 1000
	waitersRate  = 2000 // grants per second
	waitersBurst = 1
)

// waiterLib is one library under BenchmarkWaiters: a fresh limiter of
// capacity waitersBurst at waitersRate, as a function that empties it and
// one that waits for a token.
type waiterLib struct {
	name string
	make func(b *testing.B) (drain func() bool, wait func(context.Context) error)
}

// waiterLibs alternate within each run: every benchmark below runs ours,
// then x/time/rate, then ours again with -count, in one process.
var waiterLibs = []waiterLib{
	{"throttle", func(b *testing.B) (func() bool, func(context.Context) error) {
		bk, err := throttle.New(waitersBurst, throttle.Per(waitersRate, time.Second))
		if err != nil {
			b.Fatal(err)
		}
		return func() bool { ok, _ := bk.TryAcquire(waitersBurst); return ok },
			func(ctx context.Context) error { return bk.Acquire(ctx, 1) }
	}},
	{"xrate", func(*testing.B) (func() bool, func(context.Context) error) {
		l := rate.NewLimiter(waitersRate, waitersBurst)
		return func() bool { return l.AllowN(time.Now(), waitersBurst) }, l.Wait
	}},
}

// BenchmarkWaiters measures 1,000 goroutines blocked in Acquire (ours) or
// Wait (x/time/rate) on a limiter of 2,000/s with capacity 1. One op is one
// grant, so -benchtime 2000x is a one-second run and ns/op is the wall time
// between grants (500,000 at the configured rate). It reports:
//
//   - cpu-ns/grant: user+system CPU of the whole process (getrusage) from
//     the start to the b.N-th grant, divided by b.N; target: ours no higher
//     than x/time/rate's.
//   - sleeps/grant: voluntary context switches of the process's threads
//     (getrusage) per grant: how often a thread parked, and so had to be
//     woken, which is most of the CPU cost of a slow limiter.
//   - rate_ratio: grants delivered per second over the configured rate;
//     target: within 1% of 1.
//
// ctx=background gives every goroutine a context with no deadline;
// ctx=deadline gives each a context with a deadline (an hour away: never
// reached), as requests carry, which both libraries then watch. The
// limiter is emptied before the clock starts, so the initial burst does
// not count, and the goroutines are created before the clock starts too;
// waking them is part of what is measured, for both libraries alike.
// BenchmarkWaitersPhases measures their arrival and departure.
func BenchmarkWaiters(b *testing.B) {
	for _, ctxKind := range []string{"background", "deadline"} {
		for _, lib := range waiterLibs {
			b.Run("ctx="+ctxKind+"/lib="+lib.name, func(b *testing.B) {
				drain, wait := lib.make(b)
				runWaiters(b, ctxKind == "deadline", drain, wait)
			})
		}
	}
}

// runWaiters runs waitersN goroutines that call wait in a loop until b.N
// grants have been delivered, and reports the metrics described on
// BenchmarkWaiters. drain must empty the limiter.
func runWaiters(b *testing.B, deadline bool, drain func() bool, wait func(context.Context) error) {
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var (
		grants  atomic.Int64
		end     time.Time
		useEnd  usage
		start   = make(chan struct{})
		reached = make(chan struct{})
		wg      sync.WaitGroup
	)
	n := int64(b.N)
	for range waitersN {
		wg.Go(func() {
			ctx := ctx
			if deadline {
				var stop context.CancelFunc
				ctx, stop = context.WithTimeout(ctx, time.Hour)
				defer stop()
			}
			<-start
			for {
				if err := wait(ctx); err != nil {
					return // cancelled once b.N grants are in
				}
				if grants.Add(1) == n {
					end, useEnd = time.Now(), readUsage(b)
					close(reached)
				}
			}
		})
	}
	// The clock starts when the limiter is emptied: its next token is due
	// one interval later.
	b.ResetTimer()
	useBegin := readUsage(b)
	if !drain() {
		b.Fatal("could not empty the limiter")
	}
	begin := time.Now()
	close(start)
	<-reached
	b.StopTimer()
	cancel()
	wg.Wait()
	elapsed := end.Sub(begin)
	b.ReportMetric(float64(useEnd.cpu-useBegin.cpu)/float64(n), "cpu-ns/grant")
	b.ReportMetric(float64(useEnd.switches-useBegin.switches)/float64(n), "sleeps/grant")
	b.ReportMetric(float64(n)/elapsed.Seconds()/waitersRate, "rate_ratio")
}

// phasesLife is how long each goroutine of BenchmarkWaitersPhases lives:
// its context's deadline, from its arrival.
const phasesLife = 2 * time.Second

// BenchmarkWaitersPhases counts everything a program pays for waiters, in
// three phases reported apart. One op is one run: 1,000 goroutines arrive
// at once on an emptied limiter of 2,000/s with capacity 1 (they are
// started after the clock starts), each with one context whose deadline is
// 2 s away, and loop on Acquire or Wait until a call fails on that
// deadline (at once, for both libraries, once the wait would pass it), so
// that all leave as it nears.
//
//   - arrival: from the start to the 1,000th grant: the goroutines start
//     and queue, and the first round of grants goes out (0.5 s);
//   - steady: from there to 0.5 s before the deadline, when every
//     goroutine is still in the loop;
//   - teardown: from there until the last goroutine has returned: calls
//     start to fail on the deadline, and the goroutines leave.
//
// Each phase reports its CPU (getrusage, the whole process) and its
// voluntary context switches per grant made in it, and the run its
// delivered rate over the configured one (grants over the time from the
// start to the last grant).
func BenchmarkWaitersPhases(b *testing.B) {
	warmPhases(b)
	for _, lib := range waiterLibs {
		b.Run("lib="+lib.name, func(b *testing.B) {
			var sum [3]phase
			var delivered float64
			for range b.N {
				drain, wait := lib.make(b)
				ph, d := runPhases(b, drain, wait)
				for i := range sum {
					sum[i].add(ph[i])
				}
				delivered += d
			}
			for i, name := range []string{"arrival", "steady", "teardown"} {
				b.ReportMetric(float64(sum[i].use.cpu)/float64(sum[i].grants), name+"-cpu-ns/grant")
				b.ReportMetric(float64(sum[i].use.switches)/float64(sum[i].grants), name+"-sleeps/grant")
			}
			b.ReportMetric(delivered/float64(b.N), "rate_ratio")
		})
	}
}

// warmPhases makes one untimed run of each library: the first to run in
// a process would otherwise pay alone for its first thousand goroutine
// stacks and the heap growing to hold them (a fifth more CPU in arrival
// here).
func warmPhases(b *testing.B) {
	for _, lib := range waiterLibs {
		drain, wait := lib.make(b)
		runPhases(b, drain, wait)
	}
}

// phase is what one phase of a run cost, and the grants made in it.
type phase struct {
	use    usage
	grants int64
}

func (p *phase) add(q phase) {
	p.use.cpu += q.use.cpu
	p.use.switches += q.use.switches
	p.grants += q.grants
}

// runPhases runs BenchmarkWaitersPhases once and returns its three phases
// and the delivered rate over the configured one.
func runPhases(b *testing.B, drain func() bool, wait func(context.Context) error) ([3]phase, float64) {
	var (
		grants   atomic.Int64
		lastNano atomic.Int64 // of the latest grant, since begin
		arrived  = make(chan struct{})
		arrival  struct {
			use    usage
			grants int64
		}
		wg sync.WaitGroup
	)
	b.StopTimer()
	// Each run starts from a collected heap, as testing does before each
	// run of a benchmark: the garbage of the run before, often the other
	// library's, is not collected on this one's CPU.
	runtime.GC()
	b.StartTimer()
	u0 := readUsage(b)
	if !drain() {
		b.Fatal("could not empty the limiter")
	}
	begin := time.Now()
	ctx, cancel := context.WithDeadline(b.Context(), begin.Add(phasesLife))
	defer cancel()
	for range waitersN {
		wg.Go(func() {
			for wait(ctx) == nil {
				lastNano.Store(int64(time.Since(begin)))
				if grants.Add(1) == waitersN {
					arrival.use, arrival.grants = readUsage(b), waitersN
					close(arrived)
				}
			}
		})
	}
	<-arrived
	t := time.NewTimer(time.Until(begin.Add(phasesLife - 500*time.Millisecond)))
	<-t.C
	u2, g2 := readUsage(b), grants.Load()
	wg.Wait()
	u3, g3 := readUsage(b), grants.Load()
	b.StopTimer()
	ph := [3]phase{
		{usage{arrival.use.cpu - u0.cpu, arrival.use.switches - u0.switches}, arrival.grants},
		{usage{u2.cpu - arrival.use.cpu, u2.switches - arrival.use.switches}, g2 - arrival.grants},
		{usage{u3.cpu - u2.cpu, u3.switches - u2.switches}, g3 - g2},
	}
	elapsed := time.Duration(lastNano.Load())
	return ph, float64(g3) / elapsed.Seconds() / waitersRate
}

// BenchmarkWaitersPhasesPaired runs BenchmarkWaitersPhases's runs in pairs,
// ours and x/time/rate's back to back, the order swapped from one pair to
// the next, and reports for each phase the median over the pairs of the
// ratio ours / x/time/rate's, of CPU and of thread sleeps per grant, with
// the lowest and the highest ratio. One op is one pair (4 s); on a shared
// machine whose load drifts from one second to the next, a ratio taken
// within a pair moves much less than either figure alone.
func BenchmarkWaitersPhasesPaired(b *testing.B) {
	names := []string{"arrival", "steady", "teardown"}
	var cpu, sleeps [3][]float64
	warmPhases(b)
	for i := range b.N {
		var ph [2][3]phase
		for k := range 2 {
			j := k ^ i%2 // ours first in even pairs, second in odd ones
			drain, wait := waiterLibs[j].make(b)
			ph[j], _ = runPhases(b, drain, wait)
		}
		for p := range names {
			per := func(q phase, v time.Duration) float64 { return float64(v) / float64(q.grants) }
			cpu[p] = append(cpu[p], per(ph[0][p], ph[0][p].use.cpu)/per(ph[1][p], ph[1][p].use.cpu))
			sleeps[p] = append(sleeps[p], per(ph[0][p], time.Duration(ph[0][p].use.switches))/
				per(ph[1][p], time.Duration(ph[1][p].use.switches)))
		}
	}
	for p, name := range names {
		for _, m := range []struct {
			unit string
			rs   []float64
		}{{"cpu", cpu[p]}, {"sleeps", sleeps[p]}} {
			slices.Sort(m.rs)
			b.ReportMetric(m.rs[len(m.rs)/2], name+"-"+m.unit+"-ratio")
			b.ReportMetric(m.rs[0], name+"-"+m.unit+"-ratio-min")
			b.ReportMetric(m.rs[len(m.rs)-1], name+"-"+m.unit+"-ratio-max")
		}
	}
}

// BenchmarkWaitersQueueIn isolates what arrival costs apart from the
// grants: 1,000 goroutines queue at once on a limiter that grants nothing
// for hours (one token an hour, emptied), each with a context whose
// deadline is far away, and the run ends when the last has queued, as the
// limiter itself reports (ours: WaitTime reaches 1,000 tokens' wait;
// x/time/rate: Tokens falls to -1,000). One op is one run of each library,
// the order swapped every op; reported: CPU per goroutine queued, each
// library's, and their ratio (of the sums).
func BenchmarkWaitersQueueIn(b *testing.B) {
	const hour = time.Hour
	type lib struct {
		wait   func(context.Context) error
		queued func() bool
	}
	makers := []func() lib{
		func() lib {
			bk, err := throttle.New(1, throttle.Per(1, hour))
			if err != nil {
				b.Fatal(err)
			}
			bk.TryAcquire(1)
			return lib{func(ctx context.Context) error { return bk.Acquire(ctx, 1) },
				func() bool { d, _ := bk.WaitTime(1); return d > (waitersN-1)*hour }}
		},
		func() lib {
			l := rate.NewLimiter(rate.Every(hour), 1)
			l.Allow()
			return lib{l.Wait, func() bool { return l.Tokens() < -(waitersN - 1) }}
		},
	}
	var cpu [2]time.Duration
	for i := range b.N {
		for k := range 2 {
			j := k ^ i%2
			l := makers[j]()
			ctx, cancel := context.WithDeadline(b.Context(), time.Now().Add(10000*hour))
			var wg sync.WaitGroup
			runtime.GC()
			u0 := readUsage(b)
			for range waitersN {
				wg.Go(func() { l.wait(ctx) })
			}
			for !l.queued() {
				time.Sleep(100 * time.Microsecond) // polls the limiter, not the goroutines
			}
			u1 := readUsage(b)
			cancel()
			wg.Wait()
			cpu[j] += u1.cpu - u0.cpu
		}
	}
	n := float64(b.N * waitersN)
	b.ReportMetric(float64(cpu[0])/n, "throttle-cpu-ns/queued")
	b.ReportMetric(float64(cpu[1])/n, "xrate-cpu-ns/queued")
	b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "ratio")
}
