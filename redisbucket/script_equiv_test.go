package redisbucket_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// The script's fast path (mode F), its general path, and the script it
// replaced (testdata/script_hash_v1.lua: a hash per limiter, no fast path)
// give the same decisions, waits and levels on random steps: random
// limits, time gaps clustered around the emission interval, costs up to
// the capacity, each on its own key at the same instants.
func TestScriptPathsAgree(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	c := r.be.Client()
	src, err := os.ReadFile("testdata/script_hash_v1.lua")
	if err != nil {
		t.Fatal(err)
	}
	old := redis.NewScript(string(src))
	cur := redis.NewScript(redisbucket.ScriptSource)
	rng := rand.New(rand.NewPCG(3, 4))
	traces, steps := 120, 100
	if r.be.Mini != nil {
		traces = 15
	}
	now := r.fc.Now().UnixMicro()
	total := 0
	for tr := range traces {
		capacity := 1 + rng.Int64N(1000)
		if rng.IntN(4) == 0 {
			capacity = 1 + rng.Int64N(1<<40)
		}
		tokens := rng.Int64N(10_000)
		if rng.IntN(8) == 0 {
			tokens = 0
		}
		period := time.Duration(1+rng.Int64N(int64(10*time.Second))) / time.Microsecond * time.Microsecond
		rate := throttle.Per(tokens, max(period, time.Microsecond))
		sa, err := redisbucket.ShapeArgs(capacity, rate)
		if err != nil || sa[3] != "1" {
			continue // the fast path is for limits counted in µs
		}
		p := r.be.Prefix + strconv.Itoa(tr)
		kOld, kGen, kFast := p+"{old}", p+"{gen}", p+"{fast}"
		var emission int64 = 1
		if tokens > 0 {
			emission = max(1, int64(rate.Period()/time.Microsecond)/max(1, tokens))
		}
		for step := range steps {
			switch rng.IntN(4) {
			case 0:
				now += rng.Int64N(3 * emission)
			case 1:
				now += emission - 1 + rng.Int64N(3)
			case 2:
				now += rng.Int64N(int64(time.Second / time.Microsecond))
			}
			cost := 1 + rng.Int64N(min(capacity, 2+capacity/3))
			ts := strconv.FormatInt(now, 10)
			vo, err := old.Run(ctx, c, []string{kOld}, "a", ts, 1, 60000, 1, "", sa[0], sa[1], sa[2], sa[3], cost, 0).Int64Slice()
			if err != nil {
				t.Fatal(err)
			}
			vg, err := cur.Run(ctx, c, []string{kGen}, "a", ts, 1, "", 1, "", "0", "", "", sa[0], sa[1], sa[2], sa[3], cost, 0).Int64Slice()
			if err != nil {
				t.Fatal(err)
			}
			vf, err := cur.Run(ctx, c, []string{kFast}, sa[0], sa[1], sa[2], cost, "", ts).Int64Slice()
			if err != nil {
				t.Fatal(err)
			}
			// old {status, wait, amount, tok, rem}; general {status, wait,
			// amount, now, flags, live, paused, tok, rem}; fast {status, wait, now,
			// tok}. The fast path's fraction is checked through the state
			// it wrote.
			o := [4]int64{vo[0], vo[1], vo[3], vo[4]}
			g := [4]int64{vg[0], vg[1], vg[7], vg[8]}
			f := [4]int64{vf[0], vf[1], vf[3], fastRem(t, c, kFast, vf, vo[4], r.be.Mini != nil)}
			if o != g || o != f {
				t.Fatalf("trace %d step %d: cap %d rate %v cost %d: old %v, general %v, fast %v (status, wait, tok, rem)",
					tr, step, capacity, rate, cost, o, g, f)
			}
			total++
		}
	}
	t.Logf("%d random steps agree", total)
}

// fastRem returns the fraction the fast path left, from the state it
// wrote: its reply has none. A refusal writes nothing and its fraction
// shows in its wait and in the state of the next grant, which are
// compared; for it the old reply's fraction stands in.
func fastRem(t *testing.T, c redis.UniversalClient, key string, reply []int64, old int64, text bool) int64 {
	if reply[0] != 1 {
		return old
	}
	raw, err := c.Get(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	var v []float64
	if text { // miniredis: no struct, text
		for _, f := range strings.Fields(raw) {
			x, _ := strconv.ParseFloat(f, 64)
			v = append(v, x)
		}
	} else {
		v = unpackState(t, raw)
	}
	if len(v) != 4 {
		t.Fatalf("state %v", v)
	}
	return int64(v[2])
}
