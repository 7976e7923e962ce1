package redisbucket_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// slowReply advances both clocks by d while a reservation's reply is on
// its way back, once armed.
type slowReply struct {
	armed atomic.Bool
	r     *rig
	d     time.Duration
}

func (h *slowReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *slowReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *slowReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if reserving(cmd.Args()) && h.armed.CompareAndSwap(true, false) {
			h.r.advance(h.d)
		}
		return err
	}
}

// reserving reports whether args are a script call in mode r.
func reserving(args []any) bool {
	if len(args) < 3 {
		return false
	}
	nk, err := strconv.Atoi(fmt.Sprint(args[2]))
	return err == nil && len(args) > 3+nk && args[3+nk] == "r"
}

// A reserved sleeper counts its wait from when the server decided, placed
// on this clock by the fastest reply seen, not from its own reply's
// arrival: a reply 7 ms back (a loaded machine) made its sleeper 7 ms late,
// and a fleet whose replies sped up after its start went faster than the
// quota (64 processes: a vendor 429 after the vendor's margin drained).
func TestReservedSleeperCountsFromTheServersInstant(t *testing.T) {
	r, m := miniRig(t)
	r.advance(0) // the server's clock is the test's
	c := miniClient(t, m)
	h := &slowReply{r: r, d: 7 * time.Millisecond}
	c.(*redis.Client).AddHook(h)
	b, err := redisbucket.New(c, "slowreply", 1, throttle.Per(10, time.Second), r.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := b.TryAcquire(1); !ok || err != nil { // a fast reply
		t.Fatalf("the first: %v %v", ok, err)
	}
	h.armed.Store(true)
	done := make(chan error, 1)
	go func() { done <- b.Acquire(context.Background(), 1) }()
	// Reserved 100 ms ahead of the server's instant; the reply arrived 7
	// ms after it. The sleeper's timer is the only one.
	if err := r.fc.BlockUntilContext(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if h.armed.Load() {
		t.Fatal("the reservation's reply was not held")
	}
	// 93 ms, and the offset's aging since the fast reply (200 ppm).
	r.advance(93*time.Millisecond + 20*time.Microsecond)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the sleeper still sleeps at its server instant, 93 ms after its reply arrived 7 ms late")
	}
}
