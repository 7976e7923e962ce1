package redistest

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { StopShared(); os.Exit(code) }))
}

func TestBackendRoundTripAndCleanup(t *testing.T) {
	ctx := context.Background()
	var b *Backend
	t.Run("inner", func(t *testing.T) {
		b = New(t)
		c := b.Client()
		if err := c.Set(ctx, b.Prefix+"{x}", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Get(ctx, b.Prefix+"{x}").Result(); err != nil || v != "1" {
			t.Fatalf("get = %q, %v", v, err)
		}
		if !strings.HasPrefix(b.Prefix, "thrtest:TestBackendRoundTripAndCleanup.inner:") {
			t.Fatalf("prefix %q", b.Prefix)
		}
	})
	if b.Real() {
		c := New(t).Client()
		if n, err := c.Exists(ctx, b.Prefix+"{x}").Result(); err != nil || n != 0 {
			t.Fatalf("key survived the test's cleanup: %d, %v", n, err)
		}
	}
}

// With EnvAddr unset, New never touches a server it was not pointed at:
// it starts its own (or uses miniredis), never 127.0.0.1:6379.
func TestNewNeverProbesDefaultPort(t *testing.T) {
	if os.Getenv(EnvAddr) != "" {
		t.Skipf("%s is set", EnvAddr)
	}
	b := New(t)
	if b.Addr == "127.0.0.1:6379" {
		t.Fatalf("backend %q: the default port was used without %s", b.Name, EnvAddr)
	}
	if !strings.Contains(b.Name, "started by the tests") && !strings.HasPrefix(b.Name, "miniredis") {
		t.Fatalf("backend %q", b.Name)
	}
}

func TestServerFreezeThaw(t *testing.T) {
	s := StartServer(t)
	s.Freeze()
	if Ping(s.Addr, 100e6) == nil {
		t.Fatal("a frozen server answered")
	}
	s.Thaw()
	if err := Ping(s.Addr, time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestServerKillRestart(t *testing.T) {
	s := StartServer(t)
	if err := Ping(s.Addr, 200e6); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if Ping(s.Addr, 200e6) == nil {
		t.Fatal("server still answers after Stop")
	}
	s.Restart()
	if err := Ping(s.Addr, 200e6); err != nil {
		t.Fatal(err)
	}
}

func TestStartCluster(t *testing.T) {
	lc := StartCluster(t)
	b := lc.Backend(t)
	c := b.Client()
	ctx := context.Background()
	for _, k := range []string{"{a}", "{b}", "{c}", "{d}"} {
		if err := c.Set(ctx, b.Prefix+k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var masters atomic.Int32
	if err := c.(interface {
		ForEachMaster(context.Context, func(context.Context, *redis.Client) error) error
	}).ForEachMaster(ctx, func(context.Context, *redis.Client) error { masters.Add(1); return nil }); err != nil {
		t.Fatal(err)
	}
	if masters.Load() != 3 {
		t.Fatalf("masters = %d, want 3", masters.Load())
	}
}
