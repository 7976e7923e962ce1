package benchmarks

import (
	"os"
	"strconv"
	"testing"
)

// poolMinutes is THROTTLE_POOL_MINUTES, else 10.
func poolMinutes() int {
	if s := os.Getenv("THROTTLE_POOL_MINUTES"); s != "" {
		return must(strconv.Atoi(s))
	}
	return 10
}

// TestPoolTiers is issue 39's tiers goal: a provisioned key (tier 0) and
// two pay-as-you-go keys (tier 1), each 500 RPM / 200k TPM, at 150% of the
// first key's quota: how much of the first key's quota was used before the
// first call overflowed, and the overflow against the demand beyond the
// first key's quota. THROTTLE_POOL_TABLE=1 runs it.
func TestPoolTiers(t *testing.T) {
	if os.Getenv("THROTTLE_POOL_TABLE") == "" {
		t.Skip("THROTTLE_POOL_TABLE=1 runs the real-time goals")
	}
	spec := poolFirstGoal(t, poolMinutes())
	spec.keys, spec.demand, spec.tiered = 3, 1.5, true
	r := runPool(t, spec, "pool, tiers", poolTransport(spec))
	v := r.vendor
	first := float64(v.overflowAt.Sub(r.start)) / float64(spec.minute)
	ptu := max(float64(v.overflowPTU[0])/(float64(spec.rpm)*(1+first)), float64(v.overflowPTU[1])/(float64(spec.tpm)*(1+first)))
	// Beyond the first key: what the trace asked for less what that key
	// could serve over it (its fill and its refill).
	span := 1 + float64(spec.minutes)
	beyondReq := float64(int(spec.demand*float64(spec.rpm))*spec.minutes) - float64(spec.rpm)*span
	beyondTok := float64(r.demandTok) - float64(spec.tpm)*span
	overReq := float64(r.atEnd["key1"][0] + r.atEnd["key2"][0])
	overTok := float64(r.atEnd["key1"][1] + r.atEnd["key2"][1])
	t.Logf("first overflow at minute %.2f with %.2f%% of the first tier's quota used; overflow %.0f calls, %.0fk tokens: %.2f%% and %.2f%% of the demand beyond the first tier (%.0f calls, %.0fk tokens); 429s %d of %d",
		first, 100*ptu, overReq, overTok/1000, 100*overReq/beyondReq, 100*overTok/beyondTok, beyondReq, beyondTok/1000, r.refused, r.attempts)
	t.Log(r)
}

// TestPoolQuarantine is issue 39's quarantine goal: the first goal's four
// keys, one of which answers every call insufficient_quota: the calls
// that reach it, and how much of their quota the three others serve.
// THROTTLE_POOL_TABLE=1 runs it.
func TestPoolQuarantine(t *testing.T) {
	if os.Getenv("THROTTLE_POOL_TABLE") == "" {
		t.Skip("THROTTLE_POOL_TABLE=1 runs the real-time goals")
	}
	spec := poolFirstGoal(t, poolMinutes())
	spec.exhausted = true
	r := runPool(t, spec, "pool, quarantine", poolTransport(spec))
	span := 1 + float64(spec.minutes)
	var req, tok int64
	for _, k := range []string{"key1", "key2", "key3"} {
		req += r.atEnd[k][0]
		tok += r.atEnd[k][1]
	}
	used := max(float64(req)/(3*float64(spec.rpm)*span), float64(tok)/(3*float64(spec.tpm)*span))
	t.Logf("calls that reached the exhausted key: %d; the three others served %.2f%% of their quota by the last arrival",
		r.vendor.keys["key0"].attempts.Load(), 100*used)
	t.Log(r)
}

// TestPoolUneven is issue 39's uneven goal: one key at 10x another's
// quota (500 RPM / 200k TPM and 50 RPM / 20k TPM), demand 120% of the sum:
// each key's share of the calls served against its share of the quota.
// THROTTLE_POOL_TABLE=1 runs it.
func TestPoolUneven(t *testing.T) {
	if os.Getenv("THROTTLE_POOL_TABLE") == "" {
		t.Skip("THROTTLE_POOL_TABLE=1 runs the real-time goals")
	}
	spec := poolFirstGoal(t, poolMinutes())
	spec.keys, spec.div = 2, []int64{1, 10}
	r := runPool(t, spec, "pool, uneven", poolTransport(spec))
	a, b := float64(r.atEnd["key0"][0]), float64(r.atEnd["key1"][0])
	t.Logf("share of the calls served by the last arrival: key0 %.2f%%, key1 %.2f%% (quota shares %.2f%%, %.2f%%)",
		100*a/(a+b), 100*b/(a+b), 100*10.0/11, 100*1.0/11)
	t.Log(r)
}
