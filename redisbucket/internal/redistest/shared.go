package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The one redis-server a test binary starts for the tests that do not need
// a server of their own, when EnvAddr is unset and the binary is in PATH.
var shared struct {
	once sync.Once
	addr string
	err  error
	cmd  *exec.Cmd
	dir  string
}

// sharedAddr starts the shared server on first use and returns its address,
// or "" when there is no redis-server binary. A server that fails to start
// fails the test: the binary is there, so something is wrong.
func sharedAddr(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return ""
	}
	shared.once.Do(func() { shared.addr, shared.err = startShared(bin) })
	if shared.err != nil {
		tb.Fatalf("redistest: %v", shared.err)
	}
	return shared.addr
}

func startShared(bin string) (string, error) {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return "", err
	}
	shared.dir = dir
	var last error
	for range 5 {
		port, err := freePortPair()
		if err != nil {
			return "", err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
			"--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
		dieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			return "", err
		}
		shared.cmd = cmd
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if last = Ping(addr, 200*time.Millisecond); last == nil {
				return addr, nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		stopShared()
	}
	return "", fmt.Errorf("could not start a redis-server for the tests: %v", last)
}

// StopShared stops the redis-server the tests started for themselves, if
// any, by its pid, and removes its directory. Call it from TestMain after
// m.Run.
func StopShared() {
	stopShared()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
		shared.dir = ""
	}
}

func stopShared() {
	if shared.cmd != nil && shared.cmd.Process != nil {
		_ = shared.cmd.Process.Kill()
		_ = shared.cmd.Wait()
	}
	shared.cmd = nil
}
