package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server process started by a test. It is stopped (by
// its own pid, nothing else) when the test ends.
type Server struct {
	Port int
	Addr string
	Dir  string

	tb   testing.TB
	bin  string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

// ServerBinary returns the path of redis-server, or skips the test.
func ServerBinary(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Skip("redis-server binary not found in PATH: this test starts and kills its own server (apt-get install redis-server)")
	}
	return p
}

// StartServer starts redis-server on a free port (with the cluster bus port,
// port+10000, free too) in a temporary directory, with no persistence, and
// waits until it answers PING. extra arguments are appended to the command line.
func StartServer(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	bin := ServerBinary(tb)
	var last error
	for range 5 {
		port, err := freePortPair()
		if err != nil {
			tb.Fatal(err)
		}
		dir := tb.TempDir()
		s := &Server{Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir, tb: tb, bin: bin}
		s.args = append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"),
		}, extra...)
		if last = s.start(); last == nil {
			tb.Cleanup(s.Stop)
			return s
		}
	}
	tb.Fatalf("redistest: could not start redis-server: %v", last)
	return nil
}

func (s *Server) start() error {
	s.cmd = exec.Command(s.bin, s.args...)
	dieWithParent(s.cmd)
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(s.cmd, s.done)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if Ping(s.Addr, 200*time.Millisecond) == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("redis-server on port %d exited at start (see %s)", s.Port, filepath.Join(s.Dir, "redis.log"))
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("redis-server on port %d did not answer within 5 s", s.Port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server process (SIGKILL, as a crash would) and waits for it
// to exit. It does nothing when the server is not running.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Process.Signal(syscall.SIGCONT) // a frozen process dies only once resumed
		<-s.done
	}
	s.cmd = nil
}

// PID returns the server process's id, or 0 when it is not running.
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Freeze stops the server process with SIGSTOP: connections stay open and
// nothing answers, as with a server stuck in a long command or a paused VM.
func (s *Server) Freeze() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// Thaw resumes a frozen server with SIGCONT.
func (s *Server) Thaw() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// Restart starts the server again on the same port, with an empty dataset.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	var err error
	for range 20 { // the port may linger briefly after a kill
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.tb.Fatalf("redistest: restart: %v", err)
}

// freePortPair returns a port P such that P and P+10000 can both be bound on 127.0.0.1.
func freePortPair() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		l.Close()
		if err != nil {
			continue
		}
		l2.Close()
		return port, nil
	}
	return 0, errors.New("redistest: no free port pair")
}

// LocalCluster is a Redis Cluster of processes started by the test: three
// masters, each with one replica.
type LocalCluster struct {
	Nodes []*Server // Nodes[i] for i < 3 start as masters, Nodes[i+3] replicates Nodes[i]
	Seeds []string
}

// StartCluster starts six cluster-enabled redis-server processes on free
// ports, assigns the 16384 slots to three masters and one replica to each,
// and waits until every node reports cluster_state:ok and every replica is
// linked. It skips the test when redis-server is absent.
func StartCluster(tb testing.TB) *LocalCluster {
	tb.Helper()
	lc := &LocalCluster{}
	for range 6 {
		s := StartServer(tb, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000", "--repl-diskless-sync-delay", "0")
		lc.Nodes = append(lc.Nodes, s)
		lc.Seeds = append(lc.Seeds, s.Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients := make([]*redis.Client, 6)
	ids := make([]string, 6)
	for i, s := range lc.Nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: s.Addr, DisableIdentity: true})
		defer clients[i].Close()
		id, err := clients[i].ClusterMyID(ctx).Result()
		if err != nil {
			tb.Fatalf("redistest: cluster myid: %v", err)
		}
		ids[i] = id
	}
	bounds := []int{0, 5461, 10923, 16384}
	for i := range 3 {
		if err := clients[i].ClusterAddSlotsRange(ctx, bounds[i], bounds[i+1]-1).Err(); err != nil {
			tb.Fatalf("redistest: addslots: %v", err)
		}
	}
	for i := 1; i < 6; i++ {
		if err := clients[i].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(lc.Nodes[0].Port)).Err(); err != nil {
			tb.Fatalf("redistest: cluster meet: %v", err)
		}
	}
	waitFor(tb, ctx, "all nodes to know each other", func() bool {
		for _, c := range clients {
			nodes, err := c.ClusterNodes(ctx).Result()
			if err != nil || strings.Count(strings.TrimSpace(nodes), "\n")+1 != 6 || strings.Contains(nodes, "handshake") {
				return false
			}
		}
		return true
	})
	for i := 3; i < 6; i++ {
		if err := clients[i].ClusterReplicate(ctx, ids[i-3]).Err(); err != nil {
			tb.Fatalf("redistest: cluster replicate: %v", err)
		}
	}
	waitFor(tb, ctx, "cluster_state:ok and linked replicas", func() bool {
		for i, c := range clients {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
			if i >= 3 {
				repl, err := c.Info(ctx, "replication").Result()
				if err != nil || !strings.Contains(repl, "master_link_status:up") {
					return false
				}
			}
		}
		return true
	})
	return lc
}

func waitFor(tb testing.TB, ctx context.Context, what string, ok func() bool) {
	tb.Helper()
	start := time.Now()
	defer func() { tb.Logf("redistest: waited %v for %s", time.Since(start).Round(time.Millisecond), what) }()
	for !ok() {
		select {
		case <-ctx.Done():
			tb.Fatalf("redistest: timed out waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Backend returns a test backend on this cluster.
func (lc *LocalCluster) Backend(tb testing.TB) *Backend {
	b := &Backend{tb: tb, Prefix: uniquePrefix(tb), cluster: lc.Seeds, Addr: lc.Seeds[0],
		Name: "Redis Cluster started by the test at " + strings.Join(lc.Seeds, ",")}
	tb.Logf("redis backend: %s", b.Name)
	return b
}
