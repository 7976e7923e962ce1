package redisbucket_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
	"github.com/throttlekit/throttle/redisbucket/internal/redistest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the tests that kill servers cause many.
	redis.SetLogger(quietLogger{})
	// go-redis's pool, after PoolSize failed dials, retries dialing in a
	// goroutine that sleeps 1 s between tries and notices a Close only
	// after its sleep: it ends on its own, after the tests that kill servers.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"), goleak.Cleanup(func(code int) { redistest.StopShared(); os.Exit(code) }))
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// rig drives a test's time: a fake clock for the client side and, for the
// server side, miniredis's TIME (SetTime, so the script's real TIME path
// runs) or, on a real server, the script's time override. Fake time starts
// a year ahead of the real clock, on a whole second, so keys that expire on
// the fake time line never expire while the test runs.
type rig struct {
	t  testing.TB
	be *redistest.Backend
	fc *clockwork.FakeClock

	allowFailures bool // the test expects decisions by the failure policy
}

func newRig(t testing.TB) *rig {
	return newRigOn(t, redistest.New(t))
}

func newRigOn(t testing.TB, be *redistest.Backend) *rig {
	start := time.Now().Add(365 * 24 * time.Hour).Truncate(time.Second)
	r := &rig{t: t, be: be, fc: clockwork.NewFakeClockAt(start)}
	if be.Mini != nil {
		be.Mini.SetTime(start)
	}
	return r
}

// opts returns the options that put a limiter on this rig's key prefix and
// time line.
func (r *rig) opts(more ...redisbucket.Option) []redisbucket.Option {
	// A generous call timeout: these tests check exact decisions, which a
	// slow miniredis or the race detector must not hand to the failure policy.
	o := []redisbucket.Option{redisbucket.WithPrefix(r.be.Prefix), redisbucket.WithClock(r.fc),
		redisbucket.WithCallTimeout(10 * time.Second), redisbucket.WithWireHeadroom(0)}
	if r.be.Mini == nil {
		o = append(o, redisbucket.WithServerTime(r.fc.Now))
	}
	return append(o, more...)
}

// advance moves both clocks; the server's first, so that a waiter woken by
// the fake clock sees the new server time.
func (r *rig) advance(d time.Duration) {
	if r.be.Mini != nil {
		r.be.Mini.SetTime(r.fc.Now().Add(d))
	}
	r.fc.Advance(d)
}

func (r *rig) bucket(id string, capacity int64, rate throttle.Rate, more ...redisbucket.Option) *redisbucket.Bucket {
	r.t.Helper()
	b, err := redisbucket.New(r.be.Client(), id, capacity, rate, r.opts(more...)...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() {
		b.Close()
		if s := b.Stats(); s.FailureDecisions > 0 && !r.allowFailures {
			r.t.Errorf("bucket %s: %d decisions fell to the failure policy", id, s.FailureDecisions)
		}
	})
	return b
}
