package redisbucket_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
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
	envFleetChild = "THROTTLE_TEST_FLEET_CHILD" // addr,t0 (unix ns): run as one of the fleet
)

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
	t0 := time.Now().Add(1500 * time.Millisecond)
	type child struct {
		cmd *exec.Cmd
		out bytes.Buffer
	}
	children := make([]*child, fleetProcs)
	for i := range children {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestFleetChild$", "-test.count=1", "-test.v")}
		c.cmd.Env = append(os.Environ(), envFleetChild+"="+srv.Addr+","+strconv.FormatInt(t0.UnixNano(), 10))
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = c
	}
	defer func() {
		for _, c := range children {
			if c.cmd.ProcessState == nil {
				c.cmd.Process.Kill()
				c.cmd.Wait()
			}
		}
	}()
	time.Sleep(time.Until(t0.Add(fleetHealthy)))
	killed := time.Now()
	srv.Stop()
	var local, onRedis int64
	end := t0.Add(fleetHealthy + fleetOutage)
	for i, c := range children {
		err := c.cmd.Wait()
		var l, r, live int64
		line := ""
		for _, s := range strings.Split(c.out.String(), "\n") {
			if strings.Contains(s, "fleetchild ") {
				line = s[strings.Index(s, "fleetchild "):]
			}
		}
		if _, serr := fmt.Sscanf(line, "fleetchild local=%d redis=%d live=%d", &l, &r, &live); err != nil || serr != nil {
			t.Fatalf("child %d: %v %v\n%s", i, err, serr, c.out.String())
		}
		t.Logf("child %d: %d grants on Redis, %d on its local share; fleet of %d", i, r, l, live)
		if live != fleetProcs {
			t.Errorf("child %d counted a fleet of %d, want %d", i, live, fleetProcs)
		}
		local += l
		onRedis += r
	}
	outage := end.Sub(killed).Seconds()
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

// TestFleetChild is one process of TestFleetOutageShare; it runs only when
// that test starts it.
func TestFleetChild(t *testing.T) {
	env := os.Getenv(envFleetChild)
	if env == "" {
		t.Skip("run by TestFleetOutageShare as a separate process")
	}
	addr, ts, _ := strings.Cut(env, ",")
	ns, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(0, ns)
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 50 * time.Millisecond, ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond})
	defer c.Close()
	var local, onRedis atomic.Int64
	obs := observerFunc(func(e redisbucket.Event) {
		if e.Kind != throttle.EventGranted {
			return
		}
		if e.Mode == redisbucket.ModeFailLocal {
			local.Add(1)
		} else if e.Mode == redisbucket.ModeRedis {
			onRedis.Add(1)
		}
	})
	b, err := redisbucket.New(c, "fleet", fleetCapacity, throttle.Per(fleetRate, time.Second), redisbucket.WithPrefix("fleet:"),
		redisbucket.WithObserver(obs), redisbucket.WithFleetTTL(2*time.Second), redisbucket.WithCallTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
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
	fmt.Printf("fleetchild local=%d redis=%d live=%d\n", local.Load(), onRedis.Load(), redisbucket.FleetCount(b))
}
