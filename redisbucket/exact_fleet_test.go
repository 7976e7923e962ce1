package redisbucket_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
	"github.com/throttlekit/throttle/redisbucket/internal/redistest"
)

// The exact-fleet test's shape: 8 processes, 2 goroutines each, on one
// bucket of capacity 50 refilling 500/s, FailClosed, for 3 s.
const (
	exactProcs    = 8
	exactCapacity = 50
	exactRate     = 500
	exactRun      = 3 * time.Second
	envExactChild = "THROTTLE_TEST_EXACT_CHILD" // addr,t0 (unix ns): run as one of the fleet
)

// grant is one granted acquisition: the client's wall clock when the call
// was made and when it returned, and the server time the script decided
// at, all in µs since the epoch.
type grant struct{ sent, at, back int64 }

// TestFleetExactOnServerTime runs 8 OS processes (this test binary,
// re-executed) at full demand on one bucket and checks exactness where it
// is defined, on the server's instants: in every window of 2 ms (one
// token), 10 ms, 100 ms, 1 s and the whole run, the grants decided at
// server instants inside it are at most capacity + rate x window. It also
// checks that each server instant lies inside its call's client bracket
// (one machine, one wall clock: Redis 7's TIME inside a script is the
// clock's, not a time frozen at some earlier point), and reports the
// same windows counted the way a client sees them, by grants whose whole
// send-to-reply bracket lies inside: with the instants inside their
// brackets that count cannot exceed the server's, so an excess there would
// be a real over-admission, not the clock.
func TestFleetExactOnServerTime(t *testing.T) {
	if os.Getenv(envExactChild) != "" {
		t.Skip("a child of the exact-fleet test")
	}
	srv := redistest.StartServer(t)
	redistest.Announce(t, fmt.Sprintf("redis-server started by the test at %s, shared by %d child processes", srv.Addr, exactProcs))
	t0 := time.Now().Add(1500 * time.Millisecond)
	type child struct {
		cmd *exec.Cmd
		out bytes.Buffer
	}
	children := make([]*child, exactProcs)
	for i := range children {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestExactChild$", "-test.count=1")}
		c.cmd.Env = append(os.Environ(), envExactChild+"="+srv.Addr+","+strconv.FormatInt(t0.UnixNano(), 10))
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = c
	}
	var grants []grant
	for i, c := range children {
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, c.out.String())
		}
		n := 0
		sc := bufio.NewScanner(&c.out)
		for sc.Scan() {
			var g grant
			if _, err := fmt.Sscanf(sc.Text(), "grant %d %d %d", &g.sent, &g.at, &g.back); err == nil {
				grants = append(grants, g)
				n++
			}
		}
		if n == 0 {
			t.Fatalf("child %d granted nothing:\n%s", i, c.out.String())
		}
	}
	outside := 0
	for _, g := range grants {
		if g.at < g.sent || g.at > g.back {
			outside++
		}
	}
	if outside > 0 {
		t.Errorf("%d of %d grants decided at a server instant outside their call's bracket", outside, len(grants))
	}
	// Server instants: sorted, windows anchored at each grant.
	slices.SortFunc(grants, func(a, b grant) int { return int(a.at - b.at) })
	span := grants[len(grants)-1].at - grants[0].at
	for _, w := range []int64{2_000, 10_000, 100_000, 1_000_000, span} {
		bound := float64(exactCapacity) + float64(exactRate)*float64(w)/1e6
		most, j := 0, 0
		for i := range grants {
			for grants[i].at-grants[j].at > w {
				j++
			}
			most = max(most, i-j+1)
		}
		// The client's count: grants whose bracket lies inside a window
		// of w starting at a call's send.
		seen := 0
		bySent := slices.Clone(grants)
		slices.SortFunc(bySent, func(a, b grant) int { return int(a.sent - b.sent) })
		for i := range bySent {
			n := 0
			for _, g := range bySent[i:] {
				if g.sent-bySent[i].sent > w {
					break
				}
				if g.back-bySent[i].sent <= w {
					n++
				}
			}
			seen = max(seen, n)
		}
		t.Logf("window %v: at most %d grants on the server's instants, %d by the clients' brackets; bound %.1f",
			time.Duration(w)*time.Microsecond, most, seen, bound)
		if float64(most) > bound {
			t.Errorf("window %v: %d grants decided at server instants inside it, bound %.1f: over-admission", time.Duration(w)*time.Microsecond, most, bound)
		}
		if float64(seen) > bound {
			t.Errorf("window %v: %d grants with their whole bracket inside it, bound %.1f", time.Duration(w)*time.Microsecond, seen, bound)
		}
	}
	t.Logf("%d grants from %d processes over %v of server time", len(grants), exactProcs, time.Duration(span)*time.Microsecond)
}

// TestExactChild is one process of TestFleetExactOnServerTime; it runs
// only when that test starts it, and prints its grants.
func TestExactChild(t *testing.T) {
	env := os.Getenv(envExactChild)
	if env == "" {
		t.Skip("run by TestFleetExactOnServerTime as a separate process")
	}
	addr, ts, _ := strings.Cut(env, ",")
	ns, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(0, ns)
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, ContextTimeoutEnabled: true})
	defer c.Close()
	b, err := redisbucket.New(c, "exact", exactCapacity, throttle.Per(exactRate, time.Second), redisbucket.WithPrefix("exact:"),
		redisbucket.WithFailurePolicy(redisbucket.FailClosed), redisbucket.WithCallTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	time.Sleep(time.Until(t0))
	ctx, cancel := context.WithDeadline(context.Background(), t0.Add(exactRun))
	defer cancel()
	var mu sync.Mutex
	var out []grant
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				sent := time.Now().UnixMicro()
				ok, at, err := redisbucket.TryAcquireAt(b, 1)
				back := time.Now().UnixMicro()
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					time.Sleep(200 * time.Microsecond) // a refused caller comes back soon, not in a hot loop
					continue
				}
				mu.Lock()
				out = append(out, grant{sent, at, back})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if s := b.Stats(); s.FailureDecisions > 0 {
		t.Logf("%d decisions by FailClosed (refusals)", s.FailureDecisions)
	}
	w := bufio.NewWriter(os.Stdout)
	for _, g := range out {
		fmt.Fprintf(w, "grant %d %d %d\n", g.sent, g.at, g.back)
	}
	w.Flush()
}
