package benchmarks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/throttletest"
)

// The fleet harness of issue 38: N OS processes (this binary re-executed,
// fleetchild_test.go), each an http.Client under httpthrottle's Transport
// on one redisbucket.Limiter, against a loopback vendor in this process
// that enforces the quota exactly (throttletest's exact core buckets, OpenAI
// headers, 429 with a whole-second Retry-After), sharing a redis-server
// this test starts on a free port and kills, restarts or freezes mid-run
// by its pid. Opt-in: THROTTLE_BENCH_FLEET=1. Knobs (environment):
//
//	THROTTLE_FLEET_N        processes, a list (default 8)
//	THROTTLE_FLEET_FAULT    none, kill, stop: a list (default none)
//	THROTTLE_FLEET_RUNS     runs a cell (default 1)
//	THROTTLE_FLEET_CALLS    calls per process (default 50)
//	THROTTLE_FLEET_WORKERS  goroutines per process (default 4)
//	THROTTLE_FLEET_FAULT_AT the fault's instant after the start (default 2s)
//	THROTTLE_FLEET_KEYS     API keys: above 1, each process's Gate is a
//	                        pool.Pool of one redisbucket.Limiter per key,
//	                        the vendor enforcing the quota per key (default 1)
//	THROTTLE_FLEET_429      if set, the instant after the start at which the
//	                        vendor answers one request 429 Retry-After: 1
//	                        outside its quota (default none)
//	THROTTLE_FLEET_LOG      a directory: each child writes there its script
//	                        calls with their replies, its decisions and its
//	                        vendor calls, by wall clock (proc-N.log)
//	THROTTLE_FLEET_TRACE    a file: every arrival at the vendor, in ms from
//	                        the start, with its process and status
//
// kill is SIGKILL, then a new server on the same port 2 s later; stop is
// SIGSTOP, then SIGCONT 3 s later.
const (
	envFleet        = "THROTTLE_BENCH_FLEET"
	fleetRPM        = 3000
	fleetBurst      = 50
	fleetTPM        = 360_000
	fleetProcHeader = "X-Fleet-Proc"
	fleetKillFor    = 2 * time.Second
	fleetStopFor    = 3 * time.Second
	fleetAfterBack  = 3 * time.Second // the window after Redis answers again
	fleetPauseSlack = 20 * time.Millisecond
)

// fleetArrival is one request at the vendor.
type fleetArrival struct {
	at         time.Time
	proc       int
	status     int
	retryAfter time.Duration // of a 429
	injected   bool
}

// fleetVendor wraps throttletest's vendor: it records every arrival, drops
// Retry-After-Ms from 429s (so the client hears whole seconds only, as from
// a vendor that sends Retry-After alone), writes the minute's request quota
// as x-ratelimit-limit-requests, and can answer one request 429
// Retry-After: 1 outside the quota.
type fleetVendor struct {
	h        http.Handler
	mu       sync.Mutex
	arrivals []fleetArrival
	injectAt time.Time // zero: none
	injected bool
}

type fleetWriter struct {
	http.ResponseWriter
	status int
}

func (w *fleetWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		h := w.Header()
		if code == http.StatusTooManyRequests {
			h.Del("Retry-After-Ms")
		}
		// throttletest's OpenAI dialect writes a limit's capacity as
		// x-ratelimit-limit-*; OpenAI writes the minute's quota, which a
		// burst below it (50 of 3,000) is not: a Transport would tune the
		// fleet down to 50 a minute.
		if h.Get("X-Ratelimit-Limit-Requests") != "" {
			h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(fleetRPM))
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *fleetWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (v *fleetVendor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	proc, err := strconv.Atoi(r.Header.Get(fleetProcHeader))
	if err != nil {
		proc = -1
	}
	v.mu.Lock()
	inject := !v.injectAt.IsZero() && !v.injected && !now.Before(v.injectAt)
	if inject {
		v.injected = true
	}
	v.mu.Unlock()
	a := fleetArrival{at: now, proc: proc, injected: inject}
	if inject {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`)
		a.status, a.retryAfter = http.StatusTooManyRequests, time.Second
	} else {
		fw := &fleetWriter{ResponseWriter: w}
		v.h.ServeHTTP(fw, r)
		a.status = fw.status
		if fw.status == http.StatusTooManyRequests {
			if s, err := strconv.Atoi(w.Header().Get("Retry-After")); err == nil {
				a.retryAfter = time.Duration(s) * time.Second
			}
		}
	}
	v.mu.Lock()
	v.arrivals = append(v.arrivals, a)
	v.mu.Unlock()
}

// fleetRun is what one run measured.
type fleetRun struct {
	calls, failed, pastDeadline int
	maxLate                     time.Duration
	requests, vendor429         int // at the vendor, the injected 429 not counted
	elapsed, floor              time.Duration
	scriptCalls                 int64
	redisCPU                    float64 // seconds
	// usec is the time Redis spent in each command (INFO commandstats),
	// a script's own commands counted both in it and by themselves.
	usec                 map[string]int64
	breakerOpens         int64
	startFailures        int   // constructors that failed with ErrUnavailable
	procsFailure         int   // processes that took a decision in failure mode
	failureDecisions     int64 // decisions the failure policy took, all processes
	faultAt, backAt      time.Time
	fault429             int             // vendor 429s from the fault to fleetAfterBack after Redis answered
	backOnRedis          []time.Duration // per process in failure mode, its first Redis decision after its last failure one, from backAt
	notBack              int             // processes whose last decision was in failure mode, after backAt
	reached              []time.Duration // per process whose script calls failed, its first one Redis answered after, from backAt
	injected             bool
	inPause, inPauseLate int // other processes' arrivals in the injected 429's pause (late: after fleetPauseSlack)
	injectedMode         string
	modes                map[string]int64 // script calls by mode, all processes
}

func fleetEnvList(name, def string) []string {
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	return strings.Split(v, ",")
}

func fleetEnvInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

func fleetEnvDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}

// TestFleet38 runs the cells the knobs name and logs a table of medians
// and ranges. It fails if the harness breaks: a child that crashes, does
// not report, or cannot construct its limiter; a redis-server that does
// not come back; a run past its time limit.
func TestFleet38(t *testing.T) {
	if os.Getenv(envFleet) == "" {
		t.Skip("opt-in: set " + envFleet + "=1 (real time, OS processes, a redis-server)")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server binary")
	}
	runs := fleetEnvInt(t, "THROTTLE_FLEET_RUNS", 1)
	calls := fleetEnvInt(t, "THROTTLE_FLEET_CALLS", 50)
	workers := fleetEnvInt(t, "THROTTLE_FLEET_WORKERS", 4)
	faultAt := fleetEnvDuration(t, "THROTTLE_FLEET_FAULT_AT", 2*time.Second)
	var inject time.Duration
	if os.Getenv("THROTTLE_FLEET_429") != "" {
		inject = fleetEnvDuration(t, "THROTTLE_FLEET_429", 0)
	}
	type cell struct {
		n     int
		fault string
	}
	var cells []cell
	for _, ns := range fleetEnvList("THROTTLE_FLEET_N", "8") {
		n, err := strconv.Atoi(strings.TrimSpace(ns))
		if err != nil || n <= 0 || n > 256 {
			t.Fatalf("THROTTLE_FLEET_N: %q", ns)
		}
		for _, f := range fleetEnvList("THROTTLE_FLEET_FAULT", "none") {
			switch f = strings.TrimSpace(f); f {
			case "none", "kill", "stop":
			default:
				t.Fatalf("THROTTLE_FLEET_FAULT: %q (none, kill, stop)", f)
			}
			cells = append(cells, cell{n, f})
		}
	}
	results := map[cell][]fleetRun{}
	for _, c := range cells {
		for i := range runs {
			name := fmt.Sprintf("N=%d/%s/run%d", c.n, c.fault, i+1)
			ok := t.Run(name, func(t *testing.T) {
				r := runFleet(t, bin, c.n, calls, workers, c.fault, faultAt, inject)
				results[c] = append(results[c], r)
			})
			if !ok {
				t.FailNow()
			}
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "calls %d a process, %d workers each; fault at +%v; injected 429: %v; medians [min-max] of %d runs\n", calls, workers, faultAt, inject, runs)
	sb.WriteString("| N | fault | failed | vendor 429s (% calls) | time / floor | script calls / HTTP call | Redis CPU µs / HTTP call | constructors failed | breaker opens (procs in failure) | 429s fault→back+3s | back on Redis after it answers, slowest proc: a script call answered (its first Redis grant) | past deadline | others in 429 pause (>20ms) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cells {
		rs := results[c]
		col := func(f func(fleetRun) float64, format string) string { return fleetSpread(rs, f, format) }
		row := []string{strconv.Itoa(c.n), c.fault,
			col(func(r fleetRun) float64 { return float64(r.failed) }, "%.0f"),
			col(func(r fleetRun) float64 { return float64(r.vendor429) }, "%.0f") + " (" +
				col(func(r fleetRun) float64 { return 100 * float64(r.vendor429) / float64(r.calls) }, "%.2f") + "%)",
			col(func(r fleetRun) float64 {
				if r.floor <= 0 {
					return math.NaN()
				}
				return r.elapsed.Seconds() / r.floor.Seconds()
			}, "%.3fx"),
			col(func(r fleetRun) float64 { return float64(r.scriptCalls) / float64(r.requests) }, "%.2f"),
			col(func(r fleetRun) float64 { return 1e6 * r.redisCPU / float64(r.requests) }, "%.0f"),
			col(func(r fleetRun) float64 { return float64(r.startFailures) }, "%.0f"),
			col(func(r fleetRun) float64 { return float64(r.breakerOpens) }, "%.0f") + " (" +
				col(func(r fleetRun) float64 { return float64(r.procsFailure) }, "%.0f") + ")",
			"-", "-",
			col(func(r fleetRun) float64 { return float64(r.pastDeadline) }, "%.0f"),
			"-",
		}
		if c.fault != "none" {
			row[9] = col(func(r fleetRun) float64 { return float64(r.fault429) }, "%.0f")
			row[10] = col(func(r fleetRun) float64 {
				if len(r.reached) == 0 {
					return math.NaN()
				}
				return slices.Max(r.reached).Seconds()
			}, "%.2fs") + " (" + col(func(r fleetRun) float64 {
				if len(r.backOnRedis) == 0 {
					return math.NaN()
				}
				return slices.Max(r.backOnRedis).Seconds()
			}, "%.2fs") + ")"
			if nb := col(func(r fleetRun) float64 { return float64(r.notBack) }, "%.0f"); nb != "0" {
				row[10] += " (lower bound: procs never back " + nb + ")"
			}
		}
		if inject > 0 {
			row[12] = col(func(r fleetRun) float64 { return float64(r.inPause) }, "%.0f") + " (" +
				col(func(r fleetRun) float64 { return float64(r.inPauseLate) }, "%.0f") + ")"
		}
		sb.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	t.Log("\n" + sb.String())
}

// fleetSpread formats the median and the range of f over runs; NaN values
// (not measurable in that run) are left out and counted.
func fleetSpread(rs []fleetRun, f func(fleetRun) float64, format string) string {
	var vs []float64
	nan := 0
	for _, r := range rs {
		if v := f(r); math.IsNaN(v) {
			nan++
		} else {
			vs = append(vs, v)
		}
	}
	s := "n/a"
	if len(vs) > 0 {
		slices.Sort(vs)
		med := vs[len(vs)/2]
		if len(vs)%2 == 0 {
			med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
		}
		s = fmt.Sprintf(format, med)
		if len(vs) > 1 && vs[0] != vs[len(vs)-1] {
			s += " [" + fmt.Sprintf(format, vs[0]) + "-" + fmt.Sprintf(format, vs[len(vs)-1]) + "]"
		}
	}
	if nan > 0 && len(vs) > 0 {
		s += fmt.Sprintf(" (n/a in %d)", nan)
	}
	return s
}

// fleetRedis is one run's redis-server, stopped only by its pid.
type fleetRedis struct {
	bin, dir, addr string
	port           int
	cmd            *exec.Cmd
}

func (r *fleetRedis) start() error {
	cmd, err := spawnRedis(r.bin, r.port, r.dir)
	if err != nil {
		return err
	}
	r.cmd = cmd
	return nil
}

// kill sends SIGKILL to the server's pid and reaps it.
func (r *fleetRedis) kill() {
	if r.cmd != nil {
		r.cmd.Process.Signal(syscall.SIGCONT) // a stopped server dies too
		r.cmd.Process.Kill()
		r.cmd.Wait()
		r.cmd = nil
	}
}

func fleetFreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// fleetChild is one child process as the parent sees it.
type fleetChild struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr fleetBuffer
	lines  chan string // its stdout, line by line; closed at its end
}

// scriptCommands are the commands that run a script.
var scriptCommands = []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"}

// since is the work s counts beyond b: its CPU, and each command's calls
// and time.
func (s serverStats) since(b serverStats) serverStats {
	return s.merge(b, -1)
}

// plus is the work of s and o together, o a server's that counted from
// zero (a restarted one).
func (s serverStats) plus(o serverStats) serverStats {
	return s.merge(o, 1)
}

func (s serverStats) merge(o serverStats, sign int64) serverStats {
	m := serverStats{cpu: s.cpu + float64(sign)*o.cpu, calls: map[string]int64{}, usec: map[string]int64{}}
	for _, x := range []struct {
		from serverStats
		by   int64
	}{{s, 1}, {o, sign}} {
		for c, n := range x.from.calls {
			m.calls[c] += x.by * n
		}
		for c, u := range x.from.usec {
			m.usec[c] += x.by * u
		}
	}
	return m
}

func (s serverStats) scripts() int64 {
	var n int64
	for _, c := range scriptCommands {
		n += s.calls[c]
	}
	return n
}

func runFleet(t *testing.T, bin string, n, calls, workers int, fault string, faultAt, inject time.Duration) fleetRun {
	keys := max(fleetEnvInt(t, "THROTTLE_FLEET_KEYS", 1), 1)
	port, err := fleetFreePort()
	if err != nil {
		t.Fatal(err)
	}
	rs := &fleetRedis{bin: bin, dir: t.TempDir(), port: port, addr: "127.0.0.1:" + strconv.Itoa(port)}
	if err := rs.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.kill)
	if err := waitRedis(rs.addr, 5*time.Second, 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: rs.addr, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })

	sv, h := throttletest.NewHandler(throttletest.Config{
		Requests: throttle.Per(fleetRPM, time.Minute), RequestBurst: fleetBurst,
		Tokens: throttle.Per(fleetTPM, time.Minute), TokenBurst: fleetTPM,
		Dialect: throttletest.OpenAI,
	})
	v := &fleetVendor{h: h}
	hs := httptest.NewServer(v)
	t.Cleanup(hs.Close)

	floor := time.Duration(float64(max(n*calls-keys*fleetBurst, 0)) / (float64(keys) * fleetRPM / 60.0) * float64(time.Second))
	limit := 2*floor + 20*time.Second // a run that takes longer is broken
	children := make([]*fleetChild, n)
	for i := range n {
		cfg, _ := json.Marshal(fleetChildConfig{Redis: rs.addr, Vendor: hs.URL, Proc: i, Calls: calls,
			Workers: workers, Deadline: 30 * time.Second, Limit: limit, Keys: keys})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envFleetChild+"="+string(cfg))
		dieWithParent(cmd)
		c := &fleetChild{cmd: cmd, lines: make(chan string, 4)}
		cmd.Stderr = &c.stderr
		if c.stdin, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			sc := bufio.NewScanner(stdout)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				c.lines <- sc.Text()
			}
			close(c.lines)
		}()
		children[i] = c
		t.Cleanup(func() {
			c.stdin.Close()
			done := make(chan struct{})
			go func() {
				for range c.lines {
				}
				c.cmd.Wait()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				c.cmd.Process.Kill() // by its pid
				<-done
			}
		})
	}
	// Every child ready: its limiter constructed (which checks Redis).
	readyBy := time.After(30 * time.Second)
	for i, c := range children {
		select {
		case line, ok := <-c.lines:
			if line != "ready" {
				t.Fatalf("child %d did not start: %q %v; stderr: %s", i, line, ok, fleetTail(&c.stderr))
			}
		case <-readyBy:
			t.Fatalf("child %d not ready in 30 s; stderr: %s", i, fleetTail(&c.stderr))
		}
	}
	before := readServerStats(t, rdb)
	t0 := time.Now().Add(300 * time.Millisecond)
	if inject > 0 {
		v.mu.Lock()
		v.injectAt = t0.Add(inject)
		v.mu.Unlock()
	}
	for i, c := range children {
		if _, err := fmt.Fprintln(c.stdin, t0.UnixNano()); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	// The fault, in a goroutine of its own; the last stats of a killed
	// server are read just before the kill.
	var r fleetRun
	var killed serverStats
	faultErr := make(chan error, 1)
	if fault != "none" {
		go func() {
			time.Sleep(time.Until(t0.Add(faultAt)))
			switch fault {
			case "kill":
				var err error
				if killed, err = fetchServerStats(rdb); err != nil {
					faultErr <- err
					return
				}
				r.faultAt = time.Now()
				rs.kill()
				time.Sleep(fleetKillFor)
				if err := rs.start(); err != nil {
					faultErr <- err
					return
				}
				if err := waitRedis(rs.addr, 5*time.Second, time.Millisecond); err != nil {
					faultErr <- err
					return
				}
				r.backAt = time.Now()
			case "stop":
				r.faultAt = time.Now()
				rs.cmd.Process.Signal(syscall.SIGSTOP)
				time.Sleep(fleetStopFor)
				rs.cmd.Process.Signal(syscall.SIGCONT)
				r.backAt = time.Now()
			}
			faultErr <- nil
		}()
	} else {
		faultErr <- nil
	}
	var res []fleetChildResult
	end := time.After(time.Until(t0.Add(limit + 5*time.Second)))
	for i, c := range children {
		select {
		case line, ok := <-c.lines:
			var cr fleetChildResult
			if !ok || json.Unmarshal([]byte(line), &cr) != nil {
				c.cmd.Wait()
				t.Fatalf("child %d died without its result (%v, line %q); stderr: %s", i, c.cmd.ProcessState, line, fleetTail(&c.stderr))
			}
			if cr.Err != "" {
				t.Fatalf("child %d: %s", i, cr.Err)
			}
			if cr.Calls != calls {
				t.Fatalf("child %d made %d calls of %d; stderr: %s", i, cr.Calls, calls, fleetTail(&c.stderr))
			}
			res = append(res, cr)
		case <-end:
			t.Fatalf("child %d not done %v after the start", i, limit)
		}
	}
	if err := <-faultErr; err != nil {
		t.Fatalf("the fault: %v", err)
	}
	after := readServerStats(t, rdb)
	work := after.since(before)
	if fault == "kill" { // the new server counts from zero
		work = killed.since(before).plus(after)
	}
	r.scriptCalls, r.redisCPU, r.usec = work.scripts(), work.cpu, work.usec
	r.modes = map[string]int64{}
	for _, cr := range res {
		for m, k := range cr.Modes {
			r.modes[m] += k
		}
		r.calls += cr.Calls
		r.failed += cr.Failed
		r.pastDeadline += cr.PastDeadline
		r.maxLate = max(r.maxLate, cr.MaxLate)
		r.breakerOpens += cr.Stats.BreakerOpens
		r.startFailures += cr.StartFailures
		r.failureDecisions += cr.Stats.FailureDecisions
		if cr.FailureEvents > 0 {
			r.procsFailure++
			if os.Getenv("THROTTLE_FLEET_DEBUG") != "" {
				t.Logf("proc %d: %d failure events from +%v to +%v", cr.Proc, cr.FailureEvents,
					time.Duration(cr.FirstFailure-t0.UnixNano()).Round(time.Millisecond), time.Duration(cr.LastFailure-t0.UnixNano()).Round(time.Millisecond))
			}
		}
		// Back on Redis: a process in failure mode after the fault, from
		// the instant Redis answered again to its first Redis decision
		// after its last failure one. One whose last decision was in
		// failure mode had no decision left to take on Redis: its figure
		// is a lower bound, its last failure decision.
		if fault != "none" && cr.Reached >= r.faultAt.UnixNano() {
			r.reached = append(r.reached, max(0, time.Duration(cr.Reached-r.backAt.UnixNano())))
		}
		if fault != "none" && cr.LastFailure >= r.faultAt.UnixNano() {
			back := cr.RedisAfter
			if back == 0 {
				r.notBack++
				back = cr.LastFailure
			}
			r.backOnRedis = append(r.backOnRedis, max(0, time.Duration(back-r.backAt.UnixNano())))
		}
	}
	v.mu.Lock()
	arrivals := slices.Clone(v.arrivals)
	v.mu.Unlock()
	var last time.Time
	var inj *fleetArrival
	for i, a := range arrivals {
		if a.proc < 0 {
			t.Fatalf("a request without %s at the vendor", fleetProcHeader)
		}
		if a.injected {
			inj = &arrivals[i]
			continue
		}
		r.requests++
		if a.status == http.StatusOK && a.at.After(last) {
			last = a.at
		}
		if a.status == http.StatusTooManyRequests {
			r.vendor429++
			if fault != "none" && !a.at.Before(r.faultAt) && a.at.Before(r.backAt.Add(fleetAfterBack)) {
				r.fault429++
			}
		}
	}
	if path := os.Getenv("THROTTLE_FLEET_TRACE"); path != "" { // every arrival: ms from the start, process, status
		var b strings.Builder
		for _, a := range arrivals {
			fmt.Fprintf(&b, "%.3f %d %d\n", float64(a.at.Sub(t0).Microseconds())/1000, a.proc, a.status)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if keys == 1 {
		over := fleetWireDeficit(arrivals)
		t.Logf("the arrivals up to the first vendor 429 exceed the vendor's requests bound by at most %.3f of a request (%v of its refill)",
			over, time.Duration(over*float64(time.Minute)/fleetRPM).Round(time.Microsecond))
	}
	st := sv.Stats()
	if st.Requests != int64(r.requests) || r.calls != n*calls {
		t.Fatalf("the vendor saw %d requests, recorded %d; the children made %d calls of %d", st.Requests, r.requests, r.calls, n*calls)
	}
	r.elapsed, r.floor = last.Sub(t0), floor
	if inject > 0 {
		if inj == nil {
			t.Fatalf("no request reached the vendor after +%v to be answered the injected 429", inject)
		}
		r.injected = true
		r.injectedMode = "redis"
		if fault != "none" && !inj.at.Before(r.faultAt) && inj.at.Before(r.backAt) {
			r.injectedMode = "outage"
		}
		for _, a := range arrivals {
			if a.proc != inj.proc && a.at.After(inj.at) && a.at.Before(inj.at.Add(inj.retryAfter)) {
				r.inPause++
				if a.at.Sub(inj.at) > fleetPauseSlack {
					r.inPauseLate++
				}
			}
		}
	}
	rt := func(tm time.Time) string {
		if tm.IsZero() {
			return "-"
		}
		return "+" + tm.Sub(t0).Round(time.Millisecond).String()
	}
	t.Logf("N=%d fault=%s: %d calls, %d failed, %d vendor 429s (%.2f%%), last admitted at +%v, floor %v (%.3fx); "+
		"%d script calls (%.2f per HTTP call), Redis CPU %.0f µs per HTTP call; constructors failed %d; breaker opens %d, %d processes took %d decisions in failure mode; "+
		"past deadline %d (latest return vs deadline %v)",
		n, fault, r.calls, r.failed, r.vendor429, 100*float64(r.vendor429)/float64(r.calls), r.elapsed.Round(time.Millisecond),
		floor.Round(time.Millisecond), r.elapsed.Seconds()/floor.Seconds(),
		r.scriptCalls, float64(r.scriptCalls)/float64(r.requests), 1e6*r.redisCPU/float64(r.requests),
		r.startFailures, r.breakerOpens, r.procsFailure, r.failureDecisions, r.pastDeadline, r.maxLate.Round(time.Millisecond))
	var byMode []string
	for _, m := range slices.Sorted(maps.Keys(r.modes)) {
		byMode = append(byMode, fmt.Sprintf("%s %.2f", m, float64(r.modes[m])/float64(r.requests)))
	}
	var inScripts int64
	var byCmd []string
	for _, c := range slices.Sorted(maps.Keys(r.usec)) {
		if slices.Contains(scriptCommands, c) {
			inScripts += r.usec[c]
		}
		if u := float64(r.usec[c]) / float64(r.requests); u >= 0.5 {
			byCmd = append(byCmd, fmt.Sprintf("%s %.0f", c, u))
		}
	}
	t.Logf("Redis CPU µs per HTTP call: %.0f in scripts, %.0f outside them (other commands, sockets, connections, the event loop); by command, a script's own commands also counted in it: %s",
		float64(inScripts)/float64(r.requests), (1e6*r.redisCPU-float64(inScripts))/float64(r.requests), strings.Join(byCmd, ", "))
	t.Logf("script calls sent per HTTP call, by command and mode (a: acquire, r: reserve, p: peek, s: settle, d: drain, t: tune, c: cancel; sent, not all answered): %s", strings.Join(byMode, ", "))
	if fault != "none" && r.faultAt.After(last) {
		t.Logf("the run's last admitted call came before the fault: nothing of the fault measured")
	}
	if fault != "none" {
		t.Logf("fault at %s, Redis answered again at %s: %d vendor 429s up to %v after; back on Redis after it answered: %v (%d processes not back by their last decision: lower bounds)",
			rt(r.faultAt), rt(r.backAt), r.fault429, fleetAfterBack, fleetRound(r.backOnRedis), r.notBack)
		t.Logf("a script call reached Redis again after it answered: %v", fleetRound(r.reached))
	}
	if r.injected {
		t.Logf("injected 429 Retry-After: 1 to process %d at %s (%s mode): %d arrivals of other processes in the pause, %d more than %v into it",
			inj.proc, rt(inj.at), r.injectedMode, r.inPause, r.inPauseLate, fleetPauseSlack)
	}
	var firsts []string
	for _, cr := range res {
		if cr.FirstErr != "" && len(firsts) < 3 {
			firsts = append(firsts, fmt.Sprintf("proc %d: %s", cr.Proc, cr.FirstErr))
		}
	}
	if len(firsts) > 0 {
		t.Logf("first failures: %s", strings.Join(firsts, "; "))
	}
	return r
}

func fleetRound(ds []time.Duration) []time.Duration {
	out := slices.Clone(ds)
	slices.Sort(out)
	for i := range out {
		out[i] = out[i].Round(time.Millisecond)
	}
	return out
}

// fleetBuffer is a child's stderr, read while the child may still write.
type fleetBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *fleetBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// fleetTail is the end of a child's stderr, for a failure message.
func fleetTail(b *fleetBuffer) string {
	b.mu.Lock()
	s := b.b.String()
	b.mu.Unlock()
	if len(s) > 6000 {
		s = "..." + s[len(s)-6000:]
	}
	return s
}

// fleetWireDeficit is how far the arrivals up to and including the first
// vendor 429 go past the vendor's bound on requests (burst fleetBurst,
// fleetRPM a minute, full at the first): the deepest a bucket that admits
// every one of them goes below zero, in requests, 0 when none does. The
// fleet's grants fit the bound; what the arrivals add is the wire's delay
// (dial, handshake, scheduling), which a reservation's headroom must cover.
func fleetWireDeficit(arrivals []fleetArrival) float64 {
	perReq := float64(time.Minute) / fleetRPM // ns of refill per request
	level, deficit := float64(fleetBurst), 0.0
	var prev time.Time
	for _, a := range arrivals {
		if a.injected {
			continue
		}
		if !prev.IsZero() {
			level = min(level+float64(a.at.Sub(prev))/perReq, fleetBurst)
		}
		prev = a.at
		level--
		deficit = max(deficit, -level)
		if a.status == http.StatusTooManyRequests {
			break
		}
	}
	return deficit
}
