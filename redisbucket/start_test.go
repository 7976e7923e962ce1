package redisbucket_test

import (
	"errors"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// closedPort returns an address on loopback where nothing listens: a port
// the kernel just gave a listener, closed again.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func clientAt(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestNewUnreachable: a mistyped address fails New and NewLimiter at once
// with an error that matches ErrUnavailable, wraps the dial error and
// names the address, instead of a limiter whose every decision the
// failure policy takes.
func TestNewUnreachable(t *testing.T) {
	addr := closedPort(t)
	c := clientAt(t, addr)
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, redisbucket.ErrUnavailable) || !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), addr) {
			t.Fatalf("%s on a closed port: %v, want ErrUnavailable wrapping ECONNREFUSED and naming %s", what, err, addr)
		}
	}
	b, err := redisbucket.New(c, "typo", 10, throttle.Per(10, time.Second))
	if b != nil {
		t.Fatal("New returned a bucket with its error")
	}
	check("New", err)
	_, err = redisbucket.NewLimiter(c, "typo", rpmTPM, redisbucket.WithFailurePolicy(redisbucket.FailOpen))
	check("NewLimiter", err)
	_, err = redisbucket.New(c, "typo", 10, throttle.Per(10, time.Second), redisbucket.WithLease(redisbucket.Lease{}))
	check("New in lease mode", err)
}

// events records what an observer received.
type events struct {
	mu sync.Mutex
	ev []redisbucket.Event
}

func (e *events) Observe(ev redisbucket.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ev = append(e.ev, ev)
}

func (e *events) all() []redisbucket.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]redisbucket.Event(nil), e.ev...)
}

// TestStartWithoutRedis: with WithStartWithoutRedis a limiter on a closed
// port is built, its breaker open from the start, and every decision the
// failure policy takes reaches the observer with its Mode and an Err that
// matches ErrUnavailable and names the address.
func TestStartWithoutRedis(t *testing.T) {
	addr := closedPort(t)
	c := clientAt(t, addr)
	fc := clockwork.NewFakeClock()
	obs := &events{}
	l, err := redisbucket.NewLimiter(c, "down", rpmTPM, redisbucket.WithStartWithoutRedis(),
		redisbucket.WithClock(fc), redisbucket.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if !redisbucket.LimiterBreakerOpen(l) {
		t.Fatal("the breaker is closed after a failed start")
	}
	ok, err := l.TryAcquire(1, 10) // a tenth of each limit, before a fleet count
	if !ok || err != nil {
		t.Fatalf("FailLocal refused the first request: %v, %v", ok, err)
	}
	s := l.Stats()
	if s.Calls != 0 || s.BreakerOpens != 1 || s.FailureDecisions != 1 {
		t.Fatalf("stats %+v, want no call (the breaker is open), one opening, one failure decision", s)
	}
	evs := obs.all()
	if len(evs) != 2 {
		t.Fatalf("%d events, want one per limit: %+v", len(evs), evs)
	}
	for _, ev := range evs {
		if ev.Mode != redisbucket.ModeFailLocal || ev.Kind != throttle.EventGranted ||
			!errors.Is(ev.Err, redisbucket.ErrUnavailable) || !strings.Contains(ev.Err.Error(), addr) {
			t.Fatalf("event %+v (Err %v), want a fail-local grant with an Err naming %s", ev, ev.Err, addr)
		}
	}
}

// TestStartRefused: an error Redis answers with (here NOAUTH) is no
// outage: the constructor returns it, WithStartWithoutRedis or not, and
// it does not match ErrUnavailable.
func TestStartRefused(t *testing.T) {
	m := miniredis.RunT(t)
	m.RequireAuth("secret")
	c := clientAt(t, m.Addr())
	for _, opts := range [][]redisbucket.Option{nil, {redisbucket.WithStartWithoutRedis()}} {
		_, err := redisbucket.New(c, "auth", 10, throttle.Per(10, time.Second), opts...)
		if err == nil || errors.Is(err, redisbucket.ErrUnavailable) || !strings.Contains(err.Error(), "NOAUTH") {
			t.Fatalf("New with %d options against a server that wants a password: %v, want its NOAUTH", len(opts), err)
		}
	}
}
