package benchmarks

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis the benchmarks use: the one named by THROTTLE_REDIS_ADDR, else
// one redis-server this binary starts on a free port (and stops, by its
// pid, in TestMain), else none (the benchmarks skip). A server that merely
// runs at 127.0.0.1:6379 is never used.
var benchRedis struct {
	once sync.Once
	addr string
	err  error
	cmd  *exec.Cmd
	dir  string
}

func redisAddr(b testing.TB) string {
	if a := os.Getenv("THROTTLE_REDIS_ADDR"); a != "" && a != "miniredis" {
		return a
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		b.Skip("no Redis: set THROTTLE_REDIS_ADDR or install redis-server")
	}
	benchRedis.once.Do(func() { benchRedis.addr, benchRedis.err = startRedis(bin) })
	if benchRedis.err != nil {
		b.Fatal(benchRedis.err)
	}
	return benchRedis.addr
}

func startRedis(bin string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if benchRedis.dir, err = os.MkdirTemp("", "bench-redis-"); err != nil {
		return "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd, err := spawnRedis(bin, port, benchRedis.dir)
	if err != nil {
		return "", err
	}
	benchRedis.cmd = cmd
	if err := waitRedis(addr, 5*time.Second, 20*time.Millisecond); err != nil {
		stopRedis()
		return "", err
	}
	return addr, nil
}

// spawnRedis starts a redis-server without persistence on 127.0.0.1:port,
// its files in dir.
func spawnRedis(bin string, port int, dir string) (*exec.Cmd, error) {
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", dir+"/redis.log")
	return cmd, cmd.Start()
}

// waitRedis polls addr every poll until a PING is answered, for at most
// limit.
func waitRedis(addr string, limit, poll time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	var err error
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(poll) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err = c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
	}
	return fmt.Errorf("redis-server on %s did not answer: %v", addr, err)
}

// stopRedis stops the server the benchmarks started, if any.
func stopRedis() {
	if benchRedis.cmd != nil {
		_ = benchRedis.cmd.Process.Kill()
		_ = benchRedis.cmd.Wait()
		benchRedis.cmd = nil
	}
	if benchRedis.dir != "" {
		os.RemoveAll(benchRedis.dir)
	}
}

// serverStats is what INFO says about the work a server did.
type serverStats struct {
	cpu      float64          // used_cpu_user + used_cpu_sys, seconds
	calls    map[string]int64 // per command, calls (those run by scripts included)
	usec     map[string]int64 // per command, µs spent
	rejected int64
}

func readServerStats(b testing.TB, c *redis.Client) serverStats {
	s, err := fetchServerStats(c)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// fetchServerStats is readServerStats for a goroutine that cannot fail
// the test.
func fetchServerStats(c *redis.Client) (serverStats, error) {
	ctx := context.Background()
	s := serverStats{calls: map[string]int64{}, usec: map[string]int64{}}
	info, err := c.Info(ctx, "cpu", "commandstats").Result()
	if err != nil {
		return s, err
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "used_cpu_user:"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			s.cpu += f
		} else if v, ok := strings.CutPrefix(line, "used_cpu_sys:"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			s.cpu += f
		} else if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok {
			name, fields, _ := strings.Cut(rest, ":")
			for _, kv := range strings.Split(fields, ",") {
				k, v, _ := strings.Cut(kv, "=")
				n, _ := strconv.ParseInt(v, 10, 64)
				switch k {
				case "calls":
					s.calls[name] = n
				case "usec":
					s.usec[name] = n
				}
			}
		}
	}
	return s, nil
}
