package redisbucket_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// Garbage in the state key (written by hand, by another program, or left
// over from a bug) never locks a key forever nor reads as a full bucket:
// the script restarts the limits empty at the current time, refilling from
// there, reports the reset to the observer (Err ErrStateReset) and in
// Stats, and the key expires as usual.
func TestGarbageStateResetsEmpty(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ahead := r.fc.Now().Add(2 * time.Minute).UnixMicro()
	now := float64(r.fc.Now().UnixMicro())
	packState := packState
	if r.be.Mini != nil {
		packState = textState
	}
	for i, raw := range []string{
		"abc",
		"1 2 3",
		packState(now, 3, 0), // too short
		packState(now, math.Inf(-1), 0, 1e6),
		packState(now, -1e300, 0, 1e6),
		packState(now, 1e20, 0, 1e6),
		packState(now, math.NaN(), 0, 1e6),
		packState(now, 3.5, 0, 1e6),
		packState(now, 3, -1, 1e6),
		packState(now, 3, 1e6, 1e6), // rem >= den
		packState(now, 3, 0, 0),
		packState(float64(ahead), 3, 0, 1e6), // more than a minute ahead
		packState(math.Inf(1), 3, 0, 1e6),
		packState(1e300, 3, 0, 1e6),
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var rec recorder
			b := r.bucket(fmt.Sprintf("garbage%d", i), 10, throttle.Per(10, time.Second), redisbucket.WithObserver(&rec))
			c := r.be.Client()
			if err := c.Set(ctx, b.Key(), raw, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if ok, err := b.TryAcquire(1); ok || err != nil {
				t.Fatalf("%x: TryAcquire = %v, %v; want a refusal from an empty bucket", raw, ok, err)
			}
			if n := rec.count(func(e redisbucket.Event) bool { return errors.Is(e.Err, redisbucket.ErrStateReset) }); n != 1 {
				t.Fatalf("%x: %d events with ErrStateReset: %v", raw, n, rec.kinds())
			}
			if s := b.Stats(); s.StateResets != 1 {
				t.Fatalf("%x: stats %+v", raw, s)
			}
			if w, err := b.WaitTime(1); err != nil || w != 100*time.Millisecond {
				t.Fatalf("%x: WaitTime = %v, %v; want 100ms from empty", raw, w, err)
			}
			pexp, err := c.PExpireTime(ctx, b.Key()).Result()
			if err != nil || pexp <= 0 {
				t.Fatalf("%x: the key has no expiry: %v %v", raw, pexp, err)
			}
			r.advance(100 * time.Millisecond)
			if ok, err := b.TryAcquire(1); !ok || err != nil {
				t.Fatalf("%x: no refill after the reset: %v %v", raw, ok, err)
			}
			if s := b.Stats(); s.StateResets != 1 {
				t.Fatalf("%x: reset again: %+v", raw, s)
			}
		})
	}
}

// A stored time ahead of the server's clock (a failover to a node whose
// clock is behind, within a minute) stops refill until the clock passes
// it, and WaitTime says so.
func TestStoredTimeAheadCountsInWait(t *testing.T) {
	r := newRig(t)
	b := r.bucket("ahead", 10, throttle.Per(10, time.Second))
	if ok, _ := b.TryAcquire(10); !ok {
		t.Fatal("refused")
	}
	r.advance(-30 * time.Second) // the server's clock goes back 30 s
	if w, err := b.WaitTime(1); err != nil || w != 30*time.Second+100*time.Millisecond {
		t.Fatalf("WaitTime %v, %v; want 30.1s", w, err)
	}
	r.advance(30*time.Second + 100*time.Millisecond)
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("refused after the wait WaitTime gave")
	}
}

// A key that vanished (an eviction, a restart without persistence, a
// failover to a replica that had not caught up) comes back from the
// client's own view, refilled since, not as a full bucket.
func TestVanishedKeyComesBackFromTheView(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	b := r.bucket("vanish", 100, throttle.Per(100, time.Second))
	if ok, _ := b.TryAcquire(100); !ok {
		t.Fatal("refused")
	}
	r.advance(200 * time.Millisecond)
	if err := r.be.Client().Del(ctx, b.Key()).Err(); err != nil {
		t.Fatal(err)
	}
	if got := b.Tokens(); got != 20 {
		t.Fatalf("after the key vanished: %v tokens, want 20 (0 seen, refilled 200 ms since)", got)
	}
	if ok, _ := b.TryAcquire(21); ok {
		t.Fatal("granted more than the view allows")
	}
	if ok, _ := b.TryAcquire(20); !ok {
		t.Fatal("refused what the view allows")
	}
	// A process that saw the bucket long ago brings it back full.
	r.advance(time.Hour)
	r.be.Client().Del(ctx, b.Key())
	if got := b.Tokens(); got != 100 {
		t.Fatalf("tokens %v, want 100", got)
	}
}

// Lease Hold so long that its lifetime in Redis would overflow is refused
// when the bucket is built, not by every call.
func TestLeaseHoldBounded(t *testing.T) {
	r := newRig(t)
	_, err := redisbucket.New(r.be.Client(), "hold", 10, throttle.Per(1, time.Second),
		r.opts(redisbucket.WithLease(redisbucket.Lease{Hold: math.MaxInt64}))...)
	if err == nil {
		t.Fatal("Hold MaxInt64 accepted")
	}
	t.Log(err)
	if _, err := redisbucket.New(r.be.Client(), "ttl", 10, throttle.Per(1, time.Second),
		r.opts(redisbucket.WithPermitTTL(math.MaxInt64))...); err == nil {
		t.Fatal("permit TTL MaxInt64 accepted")
	}
}

// packState encodes a state value as the script writes it on a real
// server: little-endian doubles. (On miniredis, which lacks Lua's struct,
// the script writes text; textState is that.)
func packState(v ...float64) string {
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return string(b)
}

// unpackState decodes a state value.
func unpackState(t *testing.T, raw string) []float64 {
	if len(raw)%8 != 0 {
		t.Fatalf("state of %d bytes", len(raw))
	}
	var v []float64
	for i := 0; i < len(raw); i += 8 {
		v = append(v, math.Float64frombits(binary.LittleEndian.Uint64([]byte(raw[i:i+8]))))
	}
	return v
}

func textState(v ...float64) string {
	f := make([]string, len(v))
	for i, x := range v {
		f[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(f, " ")
}

// A key of another type at a bucket's key (a hash in the state format of
// an earlier version, another program's list or set) is garbage like any
// other, not an error on every call for good (WRONGTYPE): the first
// decision restarts the limits empty and reports it, WaitTime answers
// from empty, the refill goes on, and the key is a string again. On the
// fast path, in a batch, on a Limiter's general path, and for WaitTime
// first.
func TestWrongTypeKeyResetsEmpty(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.be.Client()
	kinds := map[string]func(key string) error{
		"hash v1": func(k string) error {
			return c.HSet(ctx, k, "t", r.fc.Now().UnixMicro(), "v:", 3, "r:", 0, "d:", 1).Err()
		},
		"list": func(k string) error { return c.RPush(ctx, k, "a", "b").Err() },
		"set":  func(k string) error { return c.SAdd(ctx, k, "a").Err() },
		"zset": func(k string) error { return c.ZAdd(ctx, k, redis.Z{Score: 1, Member: "a"}).Err() },
	}
	for name, plant := range kinds {
		for _, first := range []string{"TryAcquire", "WaitTime", "Limiter"} {
			t.Run(name+"/"+first, func(t *testing.T) {
				var rec recorder
				id := strings.ReplaceAll(name, " ", "") + first
				rate := throttle.Per(10, time.Second)
				var try func() (bool, error)
				var wait func() (time.Duration, error)
				var key string
				var stats func() redisbucket.Stats
				if first == "Limiter" {
					l, err := redisbucket.NewLimiter(c, id, []redisbucket.Limit{{Name: "a", Capacity: 10, Rate: rate}, {Name: "b", Capacity: 5, Rate: rate}},
						r.opts(redisbucket.WithObserver(&rec))...)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { l.Close() })
					try = func() (bool, error) { return l.TryAcquire(1, 1) }
					wait = func() (time.Duration, error) { return l.WaitTime(1, 1) }
					key, stats = l.Key(), l.Stats
				} else {
					// FailClosed: no fleet registration, so the first call
					// takes the fast path.
					b := r.bucket(id, 10, rate, redisbucket.WithObserver(&rec), redisbucket.WithFailurePolicy(redisbucket.FailClosed))
					try = func() (bool, error) { return b.TryAcquire(1) }
					wait = func() (time.Duration, error) { return b.WaitTime(1) }
					key, stats = b.Key(), b.Stats
				}
				if err := plant(key); err != nil {
					t.Fatal(err)
				}
				if r.be.Real() && first == "TryAcquire" {
					// A batch gives the key back to the client, whose calls
					// then go alone.
					sa, _ := redisbucket.ShapeArgs(10, rate)
					v, err := redis.NewScript(redisbucket.ScriptSource).Run(ctx, c, []string{key}, sa[0], sa[1], sa[2], 1, "", "", 1).Int64Slice()
					if err != nil || len(v) != 1 || v[0] != -2 {
						t.Fatalf("batch on a %s: %v %v, want [-2]", name, v, err)
					}
				}
				if first == "WaitTime" {
					if w, err := wait(); err != nil || w != 100*time.Millisecond {
						t.Fatalf("WaitTime on a %s = %v, %v; want 100ms from empty", name, w, err)
					}
				} else if ok, err := try(); ok || err != nil {
					t.Fatalf("TryAcquire on a %s = %v, %v; want a refusal from an empty bucket", name, ok, err)
				}
				if s := stats(); s.StateResets != 1 {
					t.Fatalf("stats %+v, want one reset", s)
				}
				if first != "WaitTime" {
					if n := rec.count(func(e redisbucket.Event) bool { return errors.Is(e.Err, redisbucket.ErrStateReset) }); n < 1 {
						t.Fatalf("no event with ErrStateReset: %v", rec.kinds())
					}
				}
				if typ, err := c.Type(ctx, key).Result(); err != nil || typ != "string" {
					t.Fatalf("key is a %q after the reset (%v), want a string", typ, err)
				}
				r.advance(100 * time.Millisecond)
				if ok, err := try(); !ok || err != nil {
					t.Fatalf("no refill after the reset: %v %v", ok, err)
				}
				if s := stats(); s.StateResets != 1 || s.CallErrors != 0 {
					t.Fatalf("stats %+v, want one reset and no call error", s)
				}
			})
		}
	}
}

// A fleet key of another type (the registry FailLocal counts the fleet
// in) is replaced by the next registration instead of failing it for good.
func TestWrongTypeFleetKeyReplaced(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.be.Client()
	b := r.bucket("wrongfleet", 10, throttle.Per(10, time.Second))
	if err := c.Set(ctx, b.Key()+":fleet", "not a sorted set", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TryAcquire(1); !ok || err != nil {
		t.Fatalf("TryAcquire = %v, %v", ok, err)
	}
	if n := redisbucket.FleetCount(b); n != 1 {
		t.Fatalf("fleet count %d, want 1", n)
	}
	if s := b.Stats(); s.CallErrors != 0 || s.StateResets != 0 {
		t.Fatalf("stats %+v", s)
	}
}
