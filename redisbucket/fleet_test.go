package redisbucket_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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

// The fleet test's shape: 8 processes share 800/s (capacity 100); 1.5 s on
// Redis, then the server is killed and they run 2 s on FailLocal.
const (
	fleetProcs    = 8
	fleetCapacity = 100
	fleetRate     = 800
	fleetHealthy  = 1500 * time.Millisecond
	fleetOutage   = 2 * time.Second
	envFleetChild = "THROTTLE_TEST_FLEET_CHILD" // addr: run as one of the fleet
	fleetReady    = "fleetchild ready"          // a child's line once it can start
)

// readyBuffer holds a child's output and closes ready once the child has
// written fleetReady.
type readyBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
	seen  bool
}

func (b *readyBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if !b.seen && bytes.Contains(b.buf.Bytes(), []byte(fleetReady)) {
		b.seen = true
		close(b.ready)
	}
	return n, err
}

func (b *readyBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestFleetOutageShare runs 8 separate OS processes (this test binary,
// re-executed) against one real server at full demand, kills the server,
// and counts what the fleet grants on its local shares during the outage:
// at most the quota (capacity + rate x outage) + 5%, and at least 90% of
// rate x outage, which the old fixed tenth (80% with 8 processes, 5x the
// quota with 50) could not give. Each process learns the fleet's size from
// the registry it refreshes with its own calls.
func TestFleetOutageShare(t *testing.T) {
	if os.Getenv(envFleetChild) != "" {
		t.Skip("a child of the fleet test")
	}
	srv := redistest.StartServer(t)
	redistest.Announce(t, fmt.Sprintf("redis-server started by the test at %s, shared by %d child processes, then killed", srv.Addr, fleetProcs))
	children := startFleet(t, fleetProcs, "TestFleetChild", envFleetChild, func(int) string { return srv.Addr })
	t0 := time.Now().Add(100 * time.Millisecond)
	goAt(children, t0)
	time.Sleep(time.Until(t0.Add(fleetHealthy)))
	killLate := time.Since(t0.Add(fleetHealthy))
	srv.Stop()
	var local, onRedis, early int64
	end := t0.Add(fleetHealthy + fleetOutage)
	for i, c := range children {
		var l, r, live, e int64
		c.result(t, i, "fleetchild local=%d redis=%d live=%d early=%d", &l, &r, &live, &e)
		t.Logf("child %d: %d grants on Redis, %d on its local share (%d before the kill); fleet of %d", i, r, l, e, live)
		if live != fleetProcs {
			t.Errorf("child %d counted a fleet of %d, want %d", i, live, fleetProcs)
		}
		local += l
		onRedis += r
		early += e
	}
	// The outage counted is from the planned kill, which the children
	// know; the kill itself may come later (killLate), and what the fleet
	// grants locally in between is counted in, which can only make the
	// count larger.
	outage := end.Sub(t0.Add(fleetHealthy)).Seconds()
	t.Logf("the server was killed %v after the planned instant; %d local grants before it, while Redis was slow", killLate, early)
	quota := fleetCapacity + fleetRate*outage
	t.Logf("fleet: %d grants on Redis before the kill, %d on local shares in the %.2f s outage: %.1f%% of the quota %.0f (capacity + rate x outage)",
		onRedis, local, outage, 100*float64(local)/quota, quota)
	if float64(local) > 1.05*quota {
		t.Fatalf("the fleet granted %d during the outage, above the quota %.0f + 5%%", local, quota)
	}
	if float64(local) < 0.9*fleetRate*outage {
		t.Fatalf("the fleet granted %d during the outage, below 90%% of rate x outage (%.0f): the shares are not the fleet's", local, fleetRate*outage)
	}
}

// fleetChild is one process of a fleet test: this test binary run again
// to run one test of its own, its output kept.
type fleetChild struct {
	cmd   *exec.Cmd
	out   readyBuffer
	start io.WriteCloser
}

// startFleet starts n children, each running the test run with the
// environment variable env set to value(i) for child i, and returns once
// every one has printed fleetReady. The children still running when the
// test ends are killed.
//
// A fleet starts together once every process is up (see goAt): a process
// that starts late (8 test binaries starting at once take seconds on a
// loaded machine) is counted by the others only at their next
// registration, and shares counted before it joined are too large: with 2
// of 8 started 2.6 s after the others, at load 18, TestFleetOutageShare's
// fleet granted 1959 and 1969 in the outage, above the quota.
func startFleet(t *testing.T, n int, run, env string, value func(i int) string) []*fleetChild {
	children := make([]*fleetChild, n)
	t.Cleanup(func() {
		for _, c := range children {
			if c != nil && c.cmd.ProcessState == nil {
				c.cmd.Process.Kill()
				c.cmd.Wait()
			}
		}
	})
	for i := range children {
		c := &fleetChild{cmd: exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1", "-test.v")}
		c.out.ready = make(chan struct{})
		c.cmd.Env = append(os.Environ(), env+"="+value(i))
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
		var err error
		if c.start, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = c
	}
	for i, c := range children {
		select {
		case <-c.out.ready:
		case <-time.After(time.Minute):
			t.Fatalf("child %d not ready after a minute:\n%s", i, c.out.String())
		}
	}
	return children
}

// goAt tells every child to start at t0: it reads the instant from its
// standard input.
func goAt(children []*fleetChild, t0 time.Time) {
	for _, c := range children {
		fmt.Fprintln(c.start, t0.UnixNano())
		c.start.Close()
	}
}

// result waits for child i to exit and scans its last line that starts as
// format does (up to its first verb) with format into args.
func (c *fleetChild) result(t *testing.T, i int, format string, args ...any) {
	t.Helper()
	err := c.cmd.Wait()
	prefix := format[:strings.IndexByte(format, '%')]
	line := ""
	for _, s := range strings.Split(c.out.String(), "\n") {
		if j := strings.Index(s, prefix); j >= 0 {
			line = s[j:]
		}
	}
	if _, serr := fmt.Sscanf(line, format, args...); err != nil || serr != nil {
		t.Fatalf("child %d: %v %v\n%s", i, err, serr, c.out.String())
	}
}

// TestFleetChild is one process of TestFleetOutageShare; it runs only when
// that test starts it.
func TestFleetChild(t *testing.T) {
	env := os.Getenv(envFleetChild)
	if env == "" {
		t.Skip("run by TestFleetOutageShare as a separate process")
	}
	c := redis.NewClient(&redis.Options{Addr: env, DisableIdentity: true, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 50 * time.Millisecond, ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond})
	defer c.Close()
	// Local grants are counted from the planned kill on: before it, a
	// call that timed out on a loaded machine while Redis was up was
	// decided locally too (early), and charged to Redis later.
	var local, early, onRedis atomic.Int64
	var outageFrom atomic.Int64 // unix ns, set before the first call
	obs := observerFunc(func(e redisbucket.Event) {
		if e.Kind != throttle.EventGranted {
			return
		}
		if e.Mode == redisbucket.ModeFailLocal {
			if time.Now().UnixNano() < outageFrom.Load() {
				early.Add(1)
			} else {
				local.Add(1)
			}
		} else if e.Mode == redisbucket.ModeRedis {
			onRedis.Add(1)
		}
	})
	// Start-up is not what this test measures (issue 38 keeps it as a goal
	// of its own): eight children under the race detector on two cores
	// can pass the 50 ms check's timeout while Redis is up, so a child
	// that finds Redis unavailable before the outage asks again.
	var b *redisbucket.Bucket
	var err error
	for try := 0; ; try++ {
		b, err = redisbucket.New(c, "fleet", fleetCapacity, throttle.Per(fleetRate, time.Second), redisbucket.WithPrefix("fleet:"),
			redisbucket.WithObserver(obs), redisbucket.WithFleetTTL(2*time.Second), redisbucket.WithCallTimeout(50*time.Millisecond),
			// The shares, not the breaker's patience, are measured here:
			// through the patience each try at a dead server holds its
			// process's Acquire line for a call timeout (docs/redis.md).
			redisbucket.WithBreakerPatience(0))
		if err == nil || !errors.Is(err, redisbucket.ErrUnavailable) || try == 9 {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Ready; the parent answers with the fleet's start time.
	fmt.Println(fleetReady)
	var ns int64
	if _, err := fmt.Fscanln(os.Stdin, &ns); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(0, ns)
	outageFrom.Store(t0.Add(fleetHealthy).UnixNano())
	time.Sleep(time.Until(t0))
	ctx, cancel := context.WithDeadline(context.Background(), t0.Add(fleetHealthy+fleetOutage))
	defer cancel()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				b.Acquire(ctx, 1)
			}
		}()
	}
	wg.Wait()
	fmt.Printf("fleetchild local=%d redis=%d live=%d early=%d\n", local.Load(), onRedis.Load(), redisbucket.FleetCount(b), early.Load())
}
