package trtcm

import (
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// rfc2698 is a direct transcription of RFC 2698's metering in exact
// rational arithmetic: the token counts Tc and Tp grow by CIR and PIR per
// unit of time up to CBS and PBS, and a packet of B bytes is marked as
// section 3 says.
type rfc2698 struct {
	ct, cp, pt, pp int64    // CIR and PIR as tokens per period in ns
	cbs, pbs       *big.Rat // bursts
	tc, tp         *big.Rat
	last           int64
	tmp, b         *big.Rat
}

func newRFC2698(cir throttle.Rate, cbs int64, pir throttle.Rate, pbs int64) *rfc2698 {
	return &rfc2698{
		ct: cir.Tokens(), cp: int64(cir.Period()), pt: pir.Tokens(), pp: int64(pir.Period()),
		cbs: new(big.Rat).SetInt64(cbs), pbs: new(big.Rat).SetInt64(pbs),
		tc: new(big.Rat).SetInt64(cbs), tp: new(big.Rat).SetInt64(pbs),
		tmp: new(big.Rat), b: new(big.Rat),
	}
}

// fill adds rate x dt to t, up to burst: "incremented by one CIR times per
// second up to CBS".
func (r *rfc2698) fill(t *big.Rat, tokens, period int64, burst *big.Rat, dt int64) {
	if dt == 0 || t.Cmp(burst) == 0 {
		return
	}
	t.Add(t, r.tmp.SetFrac64(dt*tokens, period))
	if t.Cmp(burst) > 0 {
		t.Set(burst)
	}
}

func (r *rfc2698) mark(at, bytes int64, aware bool, pre Color) Color {
	r.fill(r.tc, r.ct, r.cp, r.cbs, at-r.last)
	r.fill(r.tp, r.pt, r.pp, r.pbs, at-r.last)
	r.last = at
	r.b.SetInt64(bytes)
	// Color-blind: "If Tp(t)-B < 0, the packet is red, else if Tc(t)-B < 0,
	// the packet is yellow and Tp is decremented by B, else the packet is
	// green and both Tp and Tc are decremented by B." Color-aware: "If the
	// packet has been precolored as red or if Tp(t)-B < 0, the packet is
	// red, else if the packet has been precolored as yellow or if
	// Tc(t)-B < 0, the packet is yellow and Tp is decremented by B, else
	// the packet is green and both Tp and Tc are decremented by B."
	// (Tp-B < 0 is written Tp < B.)
	if aware && pre == Red || r.tp.Cmp(r.b) < 0 {
		return Red
	}
	if aware && pre == Yellow || r.tc.Cmp(r.b) < 0 {
		r.tp.Sub(r.tp, r.b)
		return Yellow
	}
	r.tp.Sub(r.tp, r.b)
	r.tc.Sub(r.tc, r.b)
	return Green
}

func randRate(rng *rand.Rand) throttle.Rate {
	periods := []time.Duration{time.Nanosecond * 7, time.Microsecond, time.Millisecond * 3, time.Second, time.Minute}
	return throttle.Per(rng.Int64N(1000)+1, periods[rng.IntN(len(periods))])
}

// TestMarkerEqualsRFC2698 compares the colors of 100,000 random traces of
// 8 requests, half of them color-aware, with the exact transcription
// above. Under the race detector, where big.Rat is ten times slower, it
// runs 10,000; CI runs the full count in the README's test command,
// without it.
func TestMarkerEqualsRFC2698(t *testing.T) {
	traces := 100_000
	if raceEnabled {
		traces = 10_000
	}
	rng := rand.New(rand.NewPCG(2698, 1))
	colors := [3]int{}
	for i := range traces {
		cir, pir := randRate(rng), randRate(rng)
		if rateLess(pir, cir) {
			cir, pir = pir, cir
		}
		cbs, pbs := rng.Int64N(50)+1, rng.Int64N(100)+1
		clk := clockwork.NewFakeClockAt(t0)
		m, err := New(cir, cbs, pir, pbs, throttle.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		ref := newRFC2698(cir, cbs, pir, pbs)
		aware := i%2 == 1
		// Steps around the time the peak bucket takes to refill one cost.
		scale := int64(pir.Period())/pir.Tokens() + 1
		at := int64(0)
		for e := range 8 {
			dt := rng.Int64N(6 * scale)
			if rng.IntN(4) == 0 {
				dt = 0
			}
			clk.Advance(time.Duration(dt))
			at += dt
			cost := rng.Int64N(max(cbs, pbs) + 3)
			pre := Color(rng.IntN(3))
			var got Color
			if aware {
				got = m.MarkAware(cost, pre)
			} else {
				got = m.Mark(cost)
			}
			want := ref.mark(at, cost, aware, pre)
			if got != want {
				t.Fatalf("trace %d (cir %v cbs %d pir %v pbs %d, aware %v) event %d at %d ns, cost %d, pre %v: got %v, want %v",
					i, cir, cbs, pir, pbs, aware, e, at, cost, pre, got, want)
			}
			colors[got]++
		}
	}
	t.Logf("green %d yellow %d red %d", colors[Green], colors[Yellow], colors[Red])
	for c, n := range colors {
		if n < traces/10 {
			t.Errorf("only %d %v marks: the traces do not exercise every color", n, Color(c))
		}
	}
}

func TestMarkerValidation(t *testing.T) {
	if _, err := New(throttle.Per(10, time.Second), 5, throttle.Per(5, time.Second), 10); err == nil {
		t.Error("peak below committed accepted")
	}
	if _, err := New(throttle.Per(10, time.Second), 0, throttle.Per(20, time.Second), 10); err == nil {
		t.Error("zero committed burst accepted")
	}
	m, err := New(throttle.Per(10, time.Second), 5, throttle.Per(20, time.Second), 10)
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Mark(-1); c != Red {
		t.Errorf("negative cost marked %v", c)
	}
	if s := Yellow.String(); s != "yellow" {
		t.Errorf("Yellow.String() = %q", s)
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
