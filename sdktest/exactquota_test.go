package sdktest_test

import (
	"math"
	"testing"
	"time"
)

// exactQuota is a vendor's continuous quota in exact integers: capacity
// units, refilled evenly at capacity units a window, as OpenAI and
// Anthropic describe their per-minute limits. The level is kept in units
// of 1/window-nanoseconds of a unit (a token times the window's
// nanoseconds), so that no refill is ever rounded: a shortfall of a
// fraction of a token is a shortfall, and a client whose arithmetic agrees
// with the vendor's is never refused.
type exactQuota struct {
	capacity int64 // units
	window   int64 // nanoseconds
	level    int64 // units × window
	last     time.Time
}

// newExactQuota returns a full quota of capacity units a window.
func newExactQuota(t testing.TB, capacity int64, window time.Duration, now time.Time) *exactQuota {
	t.Helper()
	if capacity <= 0 || window <= 0 || capacity > math.MaxInt64/4/int64(window) {
		t.Fatalf("exactQuota: %d units a %v does not fit the exact arithmetic", capacity, window)
	}
	return &exactQuota{capacity: capacity, window: int64(window), level: capacity * int64(window), last: now}
}

// advance refills the quota up to now; a clock that goes back adds
// nothing.
func (q *exactQuota) advance(now time.Time) {
	dt := int64(now.Sub(q.last))
	if dt <= 0 {
		return
	}
	q.last = now
	// A window refills the whole quota: clamping first keeps the product
	// within int64.
	q.level = min(q.capacity*q.window, q.level+min(dt, q.window)*q.capacity)
}

// short is how much of n units the quota does not hold, in its exact
// units: 0 when it holds them all.
func (q *exactQuota) short(n int64) int64 { return max(n*q.window-q.level, 0) }

// tokens converts an amount in exact units to whole units, rounded up: a
// fraction of a token missing counts as one.
func (q *exactQuota) tokens(exact int64) int64 { return (exact + q.window - 1) / q.window }

// take reserves n units; the caller has checked short(n) == 0.
func (q *exactQuota) take(n int64) { q.level -= n * q.window }

// give returns n units, never above the capacity.
func (q *exactQuota) give(n int64) {
	q.level = min(q.capacity*q.window, q.level+n*q.window)
}

// remaining is the whole units the quota holds, as a vendor reports them.
func (q *exactQuota) remaining() int64 { return max(q.level, 0) / q.window }

// wait is how long the quota takes to refill exact units, rounded up to
// the nanosecond.
func (q *exactQuota) wait(exact int64) time.Duration {
	return time.Duration((exact + q.capacity - 1) / q.capacity)
}

// toFull is how long until the quota is whole again, as OpenAI's
// x-ratelimit-reset-* and Anthropic's *-reset say.
func (q *exactQuota) toFull() time.Duration { return q.wait(q.capacity*q.window - q.level) }
