package httpthrottle

import (
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/ledger"
)

// QueuedFor returns the number of waiters queued on l's buckets, for the
// transport tests of package throttle_test, which drive a fake clock and
// need to know when every goroutine has either finished or queued.
func QueuedFor(g throttle.Gate) int {
	var m throttle.Meter
	if l, ok := g.(*throttle.Limiter); ok {
		m = l
	} else if _, learns := g.(Learner); learns {
		m, _ = g.(throttle.Meter) // Auto's Gate, over a Limiter
	}
	if m == nil {
		return 0
	}
	return m.Status(nil)[0].Waiting
}

// BurstTaken returns what the open burst from full of limit i of g
// reserved on t (see ledger.Bursts), 0 when none is open: the tests wait
// for a call to join one.
func BurstTaken(t *Transport, g throttle.Gate, i int) int64 {
	return t.bursts.Taken(ledger.Ref{G: g, I: i})
}

// SetRefusalWait sets how long t waits for a refusal's body, so that a
// test of a stalled body need not wait the default.
func SetRefusalWait(t *Transport, d time.Duration) { t.refusalWait = d }

// t0 is when the tests' fake clocks start.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newClock() *clockwork.FakeClock { return clockwork.NewFakeClockAt(t0) }

func oneLimit(int) []throttle.Limit {
	return []throttle.Limit{{Name: "req", Capacity: 10, Rate: throttle.Per(10, time.Second)}}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// SeedRefusalJitter makes the jitter of t's pauses after a refusal with no
// usable wait come from a generator seeded with seed, so that a test knows
// each pause.
func SeedRefusalJitter(t *Transport, seed uint64) {
	t.pauses.SeedJitter(seed)
}

// RefusalPause returns the pause of the step-th refusal of a call that a
// Transport seeded with seed would make first.
func RefusalPause(seed uint64, step int) time.Duration {
	p := ledger.NewRefusals()
	p.SeedJitter(seed)
	return p.Pause(step)
}

// RefusalPauseAt returns the pause a Transport seeded with seed makes at
// its n-th refusal (0 the first) when that one is at step of the schedule.
func RefusalPauseAt(seed uint64, n, step int) time.Duration {
	p := ledger.NewRefusals()
	p.SeedJitter(seed)
	for range n {
		p.Pause(0)
	}
	return p.Pause(step)
}
