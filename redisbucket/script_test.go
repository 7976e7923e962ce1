package redisbucket_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// The core issue's traces: capacity, rate, request times in seconds
// (cost 1 each), and the decisions.
func TestTraces(t *testing.T) {
	r := newRig(t)
	cases := []struct {
		name  string
		cap   int64
		rate  throttle.Rate
		at    []float64
		costs []int64
		want  string
	}{
		{"basic", 2, throttle.Per(1, time.Second), []float64{0, 0, 0, 1, 3}, nil, "TTFTT"},
		{"idle gap capped", 2, throttle.Per(10, time.Second), []float64{0, 100, 100, 100}, nil, "TTTF"},
		{"rate zero", 1, throttle.Per(0, time.Second), []float64{0, 0, 0}, nil, "TFF"},
		{"rejection moves time", 2, throttle.Per(1, 2*time.Second), []float64{0, 0, 1, 1.5}, nil, "TTFF"},
		{"slow rate no drift", 1, throttle.Per(1, 10*time.Second),
			[]float64{0, 1, 9, 9.999999, 10, 11, 19, 20, 30, 39.999999, 40}, nil, "TFFFTFFTTFT"},
		{"costs", 5, throttle.Per(1, time.Second), []float64{0, 0, 1, 3, 3}, []int64{3, 3, 1, 3, 1}, "TFTTT"},
		{"costs2", 5, throttle.Per(1, time.Second), []float64{0, 0, 1, 3, 3}, []int64{3, 3, 1, 3, 2}, "TFTTF"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := r.bucket(fmt.Sprintf("trace%d", i), c.cap, c.rate)
			start := r.fc.Now()
			var got strings.Builder
			for j, at := range c.at {
				r.advance(start.Add(time.Duration(at * float64(time.Second))).Sub(r.fc.Now()))
				cost := int64(1)
				if c.costs != nil {
					cost = c.costs[j]
				}
				ok, err := b.TryAcquire(cost)
				if err != nil {
					t.Fatal(err)
				}
				got.WriteByte("FT"[btoi(ok)])
			}
			if got.String() != c.want {
				t.Fatalf("decisions %s, want %s", got.String(), c.want)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestMatchesCore runs random traces on a core throttle.Bucket and on a
// Redis Bucket at the same microsecond-aligned instants, and requires every
// decision, every wait (the core's rounded up to the microsecond) and every
// level to match. Gaps cluster around the emission interval, where floats
// go wrong.
func TestMatchesCore(t *testing.T) {
	r := newRig(t)
	rng := rand.New(rand.NewPCG(1, 2))
	traces, steps := 120, 40
	if r.be.Mini != nil || testing.Short() {
		traces = 30 // miniredis runs about 2k scripts/s
	}
	for tr := range traces {
		capacity := 1 + rng.Int64N(20)
		tokens := rng.Int64N(50)
		period := time.Duration(1+rng.Int64N(3000)) * time.Millisecond
		if rng.IntN(3) == 0 {
			period = time.Duration(1+rng.Int64N(5_000_000)) * time.Microsecond
		}
		rate := throttle.Per(tokens, period)
		core, err := throttle.New(capacity, rate, throttle.WithClock(r.fc))
		if err != nil {
			t.Fatal(err)
		}
		b := r.bucket(fmt.Sprintf("core%d", tr), capacity, rate)
		interval := time.Second
		if tokens > 0 {
			interval = period / time.Duration(tokens)
		}
		for step := range steps {
			var gap time.Duration
			switch rng.IntN(4) {
			case 0:
				gap = 0
			case 1:
				gap = interval + time.Duration(rng.Int64N(21)-10)*time.Microsecond
			case 2:
				gap = time.Duration(rng.Float64() * 3 * float64(interval))
			default:
				gap = time.Duration(rng.Int64N(1000)) * time.Microsecond
			}
			gap = max(0, gap.Truncate(time.Microsecond))
			r.advance(gap)
			cost := 1 + rng.Int64N(capacity)
			if rng.IntN(2) == 0 {
				cost = 1
			}
			cw, cerr := core.WaitTime(cost)
			rw, rerr := b.WaitTime(cost)
			if !errors.Is(rerr, throttle.ErrCostExceedsCapacity) && !errors.Is(cerr, throttle.ErrCostExceedsCapacity) {
				if cerr != nil || rerr != nil {
					t.Fatalf("trace %d step %d: WaitTime errors %v / %v", tr, step, cerr, rerr)
				}
				if want := ceilMicro(cw); rw != want {
					t.Fatalf("trace %d step %d (cap %d, rate %v, cost %d): wait %v, core %v (µs-rounded %v)",
						tr, step, capacity, rate, cost, rw, cw, want)
				}
			} else if !errors.Is(rerr, throttle.ErrCostExceedsCapacity) || !errors.Is(cerr, throttle.ErrCostExceedsCapacity) {
				t.Fatalf("trace %d step %d: WaitTime errors %v / %v", tr, step, cerr, rerr)
			}
			cok, _ := core.TryAcquire(cost)
			rok, err := b.TryAcquire(cost)
			if err != nil {
				t.Fatal(err)
			}
			if cok != rok {
				t.Fatalf("trace %d step %d (cap %d, rate %v, cost %d): redis %v, core %v", tr, step, capacity, rate, cost, rok, cok)
			}
			if ct, rt := core.Status().Level, b.Tokens(); ct-rt > 1e-9 || rt-ct > 1e-9 {
				t.Fatalf("trace %d step %d: tokens %v, core %v", tr, step, rt, ct)
			}
		}
	}
}

func ceilMicro(d time.Duration) time.Duration {
	if t := d.Truncate(time.Microsecond); t != d {
		return t + time.Microsecond
	}
	return d
}

// A wait from WaitTime is exactly enough, and one microsecond less is not.
func TestWaitTimeExact(t *testing.T) {
	r := newRig(t)
	b := r.bucket("w", 3, throttle.Per(7, 3*time.Second))
	for range 3 {
		if ok, _ := b.TryAcquire(1); !ok {
			t.Fatal("full bucket refused")
		}
	}
	w, err := b.WaitTime(2)
	if err != nil {
		t.Fatal(err)
	}
	// 2 tokens at 7/3s take 6/7 s = 857142.857... µs, rounded up.
	if w != 857143*time.Microsecond {
		t.Fatalf("wait %v", w)
	}
	r.advance(w - time.Microsecond)
	if ok, _ := b.TryAcquire(2); ok {
		t.Fatal("granted 1µs early")
	}
	r.advance(time.Microsecond)
	if ok, _ := b.TryAcquire(2); !ok {
		t.Fatal("refused at the computed wait")
	}
}

func TestServerTimeBackwards(t *testing.T) {
	r := newRig(t)
	b := r.bucket("back", 2, throttle.Per(1, time.Second))
	b.TryAcquire(2)
	r.advance(-10 * time.Second) // a failover to a node whose clock is behind
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("time going back minted a token")
	}
	r.advance(10*time.Second + 500*time.Millisecond)
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("granted before a full token accrued since the last stored time")
	}
	r.advance(500 * time.Millisecond)
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("refused one second after the stored time")
	}
	// A write made while time was behind must not move the stored time back.
	r.advance(-5 * time.Second)
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("granted from an empty bucket")
	}
	r.advance(6 * time.Second)
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("refused one second after the stored time")
	}
}

func TestValidation(t *testing.T) {
	r := newRig(t)
	c := r.be.Client()
	b := r.bucket("v", 5, throttle.Per(1, time.Second))
	if _, err := b.TryAcquire(0); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Errorf("cost 0: %v", err)
	}
	if _, err := b.TryAcquire(-1); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Errorf("cost -1: %v", err)
	}
	if _, err := b.TryAcquire(6); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
		t.Errorf("cost 6: %v", err)
	}
	if err := b.Acquire(context.Background(), 6); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
		t.Errorf("Acquire cost 6: %v", err)
	}
	if _, err := b.WaitTime(0); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Errorf("WaitTime 0: %v", err)
	}
	for _, bad := range []struct {
		id   string
		cap  int64
		rate throttle.Rate
		opt  redisbucket.Option
	}{
		{"", 1, throttle.Per(1, time.Second), nil},
		{"a}b", 1, throttle.Per(1, time.Second), nil},
		{"x", 0, throttle.Per(1, time.Second), nil},
		{"x", 1, throttle.Per(-1, time.Second), nil},
		{"x", 1, throttle.Per(1, 0), nil},
		{"x", 1, throttle.Per(1, time.Second), redisbucket.WithPrefix("a{b}")},
		{"x", 1, throttle.Per(1, time.Second), redisbucket.WithCallTimeout(0)},
		{"x", 1 << 51, throttle.Per(1, time.Second), nil},
	} {
		opts := []redisbucket.Option{}
		if bad.opt != nil {
			opts = append(opts, bad.opt)
		}
		if _, err := redisbucket.New(c, bad.id, bad.cap, bad.rate, opts...); err == nil {
			t.Errorf("New(%q, %d, %v) accepted", bad.id, bad.cap, bad.rate)
		}
	}
}

// Limits that would overflow 2^52 at microseconds fall back to a coarser
// unit, and are refused with ErrRange when even seconds overflow.
func TestRangeAndUnits(t *testing.T) {
	r := newRig(t)
	c := r.be.Client()
	cases := []struct {
		cap  int64
		rate throttle.Rate
		unit time.Duration
	}{
		{1000, throttle.Per(1, time.Second), time.Microsecond},
		{2_000_000, throttle.Per(2_000_000, 24*time.Hour), time.Microsecond},
		{1_000_000, throttle.Per(1, 24*time.Hour), time.Millisecond},
		{1_000_000_000, throttle.Per(1, 24*time.Hour), time.Second},
		{100, throttle.Per(1, 7*time.Second+time.Nanosecond), time.Microsecond},
	}
	for _, cs := range cases {
		b, err := redisbucket.New(c, "u", cs.cap, cs.rate)
		if err != nil {
			t.Fatalf("%d at %v: %v", cs.cap, cs.rate, err)
		}
		t.Cleanup(func() { b.Close() })
		if b.Granularity() != cs.unit {
			t.Errorf("%d at %v: unit %v, want %v", cs.cap, cs.rate, b.Granularity(), cs.unit)
		}
	}
	if _, err := redisbucket.New(c, "u", 1<<40, throttle.Per(1, 7*time.Second+time.Nanosecond)); !errors.Is(err, redisbucket.ErrRange) {
		t.Fatalf("want ErrRange, got %v", err)
	}
	if _, err := redisbucket.New(c, "u", 10, throttle.Per(1<<62, time.Nanosecond)); !errors.Is(err, redisbucket.ErrRange) {
		t.Fatalf("want ErrRange for a huge rate, got %v", err)
	}
}

// A bucket counted in milliseconds is exact at millisecond granularity: it
// refills at whole milliseconds of server time, and its waits land on them.
func TestCoarseUnitExact(t *testing.T) {
	r := newRig(t)
	b := r.bucket("ms", 1_000_000, throttle.Per(1, 24*time.Hour))
	if b.Granularity() != time.Millisecond {
		t.Fatalf("unit %v", b.Granularity())
	}
	r.advance(300 * time.Microsecond) // mid-millisecond
	if ok, _ := b.TryAcquire(1_000_000); !ok {
		t.Fatal("full bucket refused")
	}
	w, err := b.WaitTime(1)
	if err != nil {
		t.Fatal(err)
	}
	if w != 24*time.Hour-300*time.Microsecond {
		t.Fatalf("wait %v, want the next whole millisecond 24h later", w)
	}
	r.advance(w - time.Microsecond)
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("granted early")
	}
	r.advance(time.Microsecond)
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("refused at the wait")
	}
}

// Large levels and rates stay exact at microseconds: 2^30 tokens per 1024 s
// is 16384 tokens every 15625 µs.
func TestLargeNumbersExact(t *testing.T) {
	r := newRig(t)
	const capacity = 1 << 30
	b := r.bucket("big", capacity, throttle.Per(capacity, 1024*time.Second))
	if b.Granularity() != time.Microsecond {
		t.Fatalf("unit %v", b.Granularity())
	}
	if ok, _ := b.TryAcquire(capacity); !ok {
		t.Fatal("full bucket refused")
	}
	r.advance(time.Microsecond)
	if got, want := b.Tokens(), 1+759.0/15625; got != want {
		t.Fatalf("tokens after 1µs %v, want %v", got, want)
	}
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("refused 1")
	}
	r.advance(15624 * time.Microsecond) // 759 + 16384*15624 = 16383*15625 units
	if got := b.Tokens(); got != 16383 {
		t.Fatalf("tokens %v, want exactly 16383", got)
	}
	if ok, _ := b.TryAcquire(16383); !ok {
		t.Fatal("refused 16383")
	}
	if ok, _ := b.TryAcquire(1); ok {
		t.Fatal("granted a token that has not accrued")
	}
	r.advance(366 * 24 * time.Hour) // idle for long: full, no overflow
	if got := b.Tokens(); got != capacity {
		t.Fatalf("tokens after a long idle %v", got)
	}
}

// Processes with different configurations for one id (a rolling deploy)
// share whole tokens, each capped at its own capacity; a fraction written
// with another rate is dropped rather than misread.
func TestRollingConfigChange(t *testing.T) {
	r := newRig(t)
	a := r.bucket("roll", 10, throttle.Per(1, time.Second))  // 1 token per 10^6 µs
	b := r.bucket("roll", 8, throttle.Per(3, 2*time.Second)) // 3 tokens per 2*10^6 µs
	if ok, _ := a.TryAcquire(5); !ok {
		t.Fatal("refused")
	}
	r.advance(500 * time.Millisecond)
	if got := b.Tokens(); got != 5.75 { // 5 + 0.5 s at 1.5/s
		t.Fatalf("b sees %v, want 5.75", got)
	}
	if ok, _ := b.TryAcquire(1); !ok { // writes 4 and 3/4 token in b's units
		t.Fatal("refused")
	}
	if got := a.Tokens(); got != 4 {
		t.Fatalf("a sees %v, want 4: the fraction in b's units is dropped", got)
	}
	if got := b.Tokens(); got != 4.75 {
		t.Fatalf("b sees %v, want 4.75", got)
	}
	r.advance(time.Hour)
	if ga, gb := a.Tokens(), b.Tokens(); ga != 10 || gb != 8 {
		t.Fatalf("full levels %v, %v: each capped at its own capacity", ga, gb)
	}
}

// After the server's clock went back, the key expires when the bucket is
// full counting from the stored time, not from the earlier clock.
func TestExpiryAfterClockWentBack(t *testing.T) {
	r := newRig(t)
	b := r.bucket("backexp", 3, throttle.Per(1, time.Second))
	t0 := r.fc.Now()
	b.TryAcquire(1)
	r.advance(-10 * time.Second)
	if ok, _ := b.TryAcquire(1); !ok {
		t.Fatal("refused")
	}
	at, err := r.be.Client().Do(context.Background(), "PEXPIRETIME", b.Key()).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if want := t0.Add(2*time.Second).UnixMilli() + 1; at != want {
		t.Fatalf("PEXPIRETIME %d, want %d (2 s after the stored time)", at, want)
	}
}
