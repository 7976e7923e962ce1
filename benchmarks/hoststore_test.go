package benchmarks

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/hoststore"
	"github.com/throttlekit/throttle/redisbucket"
)

// BenchmarkHostDecision measures one decision of a Limiter shared through
// the host's file (hoststore) beside one shared through Redis on loopback
// (redisbucket's Limiter, on the redis-server this binary starts), from one
// goroutine, at a rate that grants every call so that both write.
func BenchmarkHostDecision(b *testing.B) {
	for _, impl := range []string{"hoststore", "redisbucket"} {
		b.Run(impl, func(b *testing.B) {
			var g throttle.Gate
			switch impl {
			case "hoststore":
				s, err := hoststore.Open(filepath.Join(b.TempDir(), "quota"))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				if g, err = hoststore.NewLimiter(s, "bench", decisionRate, throttle.Per(decisionRate, time.Second)); err != nil {
					b.Fatal(err)
				}
			case "redisbucket":
				c := redisClient(b)
				prefix := benchPrefix(b)
				cleanup(b, c, prefix)
				l, err := redisbucket.NewLimiter(c, "bench", []throttle.Limit{{Name: "bench", Capacity: decisionRate, Rate: throttle.Per(decisionRate, time.Second)}},
					redisbucket.WithPrefix(prefix), redisbucket.WithFailurePolicy(redisbucket.FailClosed))
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				g = l
			}
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if _, ok, err := g.TryAcquirePermit(1); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
		})
	}
}

// envHostChild makes the benchmark binary one of the processes of
// BenchmarkHost16Processes: "path start-unix-ns seconds".
const envHostChild = "THROTTLE_BENCH_HOST_CHILD"

// BenchmarkHost16Processes runs 16 OS processes deciding on one hoststore
// Limiter for a second together, each in a loop of TryAcquirePermit, and
// reports the decisions of all of them a second: what the host's file
// sustains under contention on this machine.
func BenchmarkHost16Processes(b *testing.B) {
	const procs, secs = 16, 1
	for range b.N {
		path := filepath.Join(b.TempDir(), "quota")
		s, err := hoststore.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		start := time.Now().Add(300 * time.Millisecond) // every process started by then
		var cmds []*exec.Cmd
		for range procs {
			cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", envHostChild, path, start.UnixNano(), secs))
			cmd.Stderr = os.Stderr
			cmds = append(cmds, cmd)
		}
		outs := make([]strings.Builder, procs)
		for i, cmd := range cmds {
			cmd.Stdout = &outs[i]
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
		}
		total := 0
		for i, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
			n, err := strconv.Atoi(strings.TrimSpace(outs[i].String()))
			if err != nil {
				b.Fatal(err)
			}
			total += n
		}
		b.ReportMetric(float64(total)/secs, "decisions/s")
	}
}

// runHostChild decides from the start instant for the given seconds,
// prints how many decisions it made, and exits.
func runHostChild(v string) {
	var path string
	var startNs int64
	var secs int
	if _, err := fmt.Sscan(v, &path, &startNs, &secs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s, err := hoststore.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	l, err := hoststore.NewLimiter(s, "shared", 100, throttle.Per(20_000, time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	time.Sleep(time.Until(time.Unix(0, startNs))) // a child process, no goroutine to wait for: the common start
	end := time.Unix(0, startNs).Add(time.Duration(secs) * time.Second)
	n := 0
	for ; time.Now().Before(end); n++ {
		if _, _, err := l.TryAcquirePermit(1); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fmt.Println(n)
	os.Exit(0)
}
