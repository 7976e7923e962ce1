package main

import (
	"fmt"
	"math"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// A limitModel decides, for one limit of one key, the requests of a trace in
// arrival order, as one rate-limiting algorithm would. simulate --compare
// runs the same trace through each algorithm, all set to the limit's rate
// and burst.
//
// Only the token bucket is the library, exact. The others are reference
// models written here for the comparison, in float64 nanoseconds (exact to
// well under a nanosecond for the first hundred days of a trace), each
// rounding the instants it reports up to the next whole nanosecond. With
// burst B and rate R tokens per period P, each token takes T = P/R and a
// window lasts W = B*T: the burst's worth of the rate, P itself when the
// burst is the default, R.
type limitModel interface {
	// ready returns the earliest instant at or after t at which the model
	// admits cost, never if it never will.
	ready(t time.Duration, cost int64) time.Duration
	// leave returns when a request admitted at t leaves: t, but for the
	// queue, which paces.
	leave(t time.Duration, cost int64) time.Duration
	// take records a request admitted at t that leaves at dep.
	take(t, dep time.Duration, cost int64)
}

// algorithm is one of the models simulate --compare runs.
type algorithm struct {
	name string
	make func(l limitSpec) limitModel
}

func algorithms() []algorithm {
	return []algorithm{
		{"token bucket (throttle)", newBucketModel},
		{"GCRA", func(l limitSpec) limitModel { return &gcra{p: paramsOf(l)} }},
		{"fixed window", func(l limitSpec) limitModel { return &fixedWindow{p: paramsOf(l), n: -1} }},
		{"sliding window log", func(l limitSpec) limitModel { return &slidingLog{p: paramsOf(l)} }},
		{"sliding window counter", func(l limitSpec) limitModel { return &slidingCounter{p: paramsOf(l), n: -1} }},
		{"leaky bucket queue (pacing)", func(l limitSpec) limitModel { return &leakyQueue{p: paramsOf(l)} }},
	}
}

// params are a limit's burst, token time and window, in float64 ns.
type params struct {
	burst float64
	t, w  float64 // T and W above
}

func paramsOf(l limitSpec) params {
	t := float64(l.rate.Period()) / float64(l.rate.Tokens())
	return params{burst: float64(l.capacity), t: t, w: float64(l.capacity) * t}
}

// ceilNS rounds an instant in float64 ns up to a whole nanosecond.
func ceilNS(f float64) time.Duration {
	if f >= float64(never) {
		return never
	}
	return time.Duration(math.Ceil(f))
}

// bucketModel is the library's own Bucket, on a fake clock of its own:
// the exact token bucket.
type bucketModel struct {
	clock *clockwork.FakeClock
	b     *throttle.Bucket
	now   time.Duration
}

func newBucketModel(l limitSpec) limitModel {
	clock := clockwork.NewFakeClockAt(epoch)
	b, err := throttle.New(l.capacity, l.rate, throttle.WithClock(clock))
	if err != nil {
		panic(err) // parseLimit made the same bucket
	}
	return &bucketModel{clock: clock, b: b}
}

func (m *bucketModel) advance(t time.Duration) {
	if t > m.now {
		m.clock.Advance(t - m.now)
		m.now = t
	}
}

func (m *bucketModel) ready(t time.Duration, cost int64) time.Duration {
	m.advance(t)
	w, err := m.b.WaitTime(cost)
	if err != nil || w > never-t {
		return never
	}
	return t + w
}

func (m *bucketModel) leave(t time.Duration, _ int64) time.Duration { return t }

func (m *bucketModel) take(t, _ time.Duration, cost int64) {
	m.advance(t)
	if ok, err := m.b.TryAcquire(cost); !ok || err != nil {
		panic(fmt.Sprintf("token bucket refused at %v the cost %d it was ready for (%v)", t, cost, err))
	}
}

// gcra is the generic cell rate algorithm: a theoretical arrival time tat
// that each request pushes cost*T further; a request is admitted while tat
// stays within the burst's worth, B*T, of now. It is the token bucket in
// other terms, so it decides as the bucket does, to the rounding of T.
type gcra struct {
	p   params
	tat float64
}

func (m *gcra) ready(t time.Duration, cost int64) time.Duration {
	return max(t, ceilNS(m.tat-(m.p.burst-float64(cost))*m.p.t))
}

func (m *gcra) leave(t time.Duration, _ int64) time.Duration { return t }

func (m *gcra) take(t, _ time.Duration, cost int64) {
	m.tat = max(m.tat, float64(t)) + float64(cost)*m.p.t
}

// fixedWindow counts the tokens admitted in windows [n*W, (n+1)*W) from
// time 0 of the trace and admits while the count stays within the burst:
// up to twice the burst passes around a window's end.
type fixedWindow struct {
	p     params
	n     int64 // window of count
	count float64
}

func (m *fixedWindow) window(t time.Duration) int64 { return int64(float64(t) / m.p.w) }

func (m *fixedWindow) ready(t time.Duration, cost int64) time.Duration {
	if m.window(t) != m.n || m.count+float64(cost) <= m.p.burst {
		return t
	}
	at := max(t+1, ceilNS(float64(m.n+1)*m.p.w))
	for m.window(at) == m.n {
		at++ // the float division put it back in the window
	}
	return at
}

func (m *fixedWindow) leave(t time.Duration, _ int64) time.Duration { return t }

func (m *fixedWindow) take(t, _ time.Duration, cost int64) {
	if n := m.window(t); n != m.n {
		m.n, m.count = n, 0
	}
	m.count += float64(cost)
}

// slidingLog keeps every admitted request of the last W and admits while
// their tokens stay within the burst: exact, at a memory cost of one entry
// per request in the window.
type slidingLog struct {
	p     params
	log   []logEntry // oldest first
	first int        // entries before first have left the window
	sum   float64    // tokens of log[first:]
}

type logEntry struct {
	t    time.Duration
	cost float64
}

// prune drops the entries that left the window (t-W, t].
func (m *slidingLog) prune(t time.Duration) {
	for m.first < len(m.log) && float64(m.log[m.first].t) <= float64(t)-m.p.w {
		m.sum -= m.log[m.first].cost
		m.first++
	}
	if m.first > len(m.log)/2 {
		m.log = append(m.log[:0], m.log[m.first:]...)
		m.first = 0
	}
}

func (m *slidingLog) ready(t time.Duration, cost int64) time.Duration {
	m.prune(t)
	excess := m.sum + float64(cost) - m.p.burst
	if excess <= 0 {
		return t
	}
	// Wait until enough of the oldest entries leave.
	for _, e := range m.log[m.first:] {
		excess -= e.cost
		if excess <= 0 {
			// e leaves once t-W >= e.t.
			at := max(t, ceilNS(float64(e.t)+m.p.w))
			for float64(e.t) > float64(at)-m.p.w {
				at++ // rounding
			}
			return at
		}
	}
	return never // cost above the burst, which simulate refuses before
}

func (m *slidingLog) leave(t time.Duration, _ int64) time.Duration { return t }

func (m *slidingLog) take(t, _ time.Duration, cost int64) {
	m.prune(t)
	m.log = append(m.log, logEntry{t, float64(cost)})
	m.sum += float64(cost)
}

// slidingCounter is the weighted two-window approximation of the sliding
// log: fixed windows as fixedWindow, but a request is admitted while the
// previous window's count, weighted by the share of it still inside the
// trailing window W, plus the current window's count stays within the
// burst. Two counters a key, whatever the traffic.
type slidingCounter struct {
	p         params
	n         int64 // window of cur
	prev, cur float64
}

func (m *slidingCounter) window(t time.Duration) int64 { return int64(float64(t) / m.p.w) }

// counts returns the previous and the current window's counts at window n.
func (m *slidingCounter) counts(n int64) (prev, cur float64) {
	switch n {
	case m.n:
		return m.prev, m.cur
	case m.n + 1:
		return m.cur, 0
	}
	return 0, 0
}

func (m *slidingCounter) ready(t time.Duration, cost int64) time.Duration {
	c := float64(cost)
	for n := m.window(t); ; n++ {
		prev, cur := m.counts(n)
		start := float64(n) * m.p.w
		// The estimate prev*(1-x/W)+cur falls as x, the time into the
		// window, grows: solve for the x at which the cost fits.
		room := m.p.burst - cur - c
		if room < 0 {
			continue // not before the next window
		}
		x := 0.0
		if prev > room {
			x = m.p.w * (1 - room/prev)
		}
		at := max(t, ceilNS(start+x))
		if m.window(at) != n {
			continue // rounding pushed it into the next window
		}
		return at
	}
}

func (m *slidingCounter) leave(t time.Duration, _ int64) time.Duration { return t }

func (m *slidingCounter) take(t, _ time.Duration, cost int64) {
	n := m.window(t)
	m.prev, m.cur = m.counts(n)
	m.n = n
	m.cur += float64(cost)
}

// leakyQueue is the leaky bucket as a queue: admitted requests leave one
// after the other, each cost*T after the one before (at once when the
// queue is empty), so nothing ever leaves in a burst; a request is
// admitted while the tokens queued ahead of it and its own fit in the
// burst, the queue's size. It is what throttle.Pace does, with a queue.
type leakyQueue struct {
	p    params
	free float64 // when the queue is empty again
}

func (m *leakyQueue) ready(t time.Duration, cost int64) time.Duration {
	return max(t, ceilNS(m.free-(m.p.burst-float64(cost))*m.p.t))
}

func (m *leakyQueue) leave(t time.Duration, _ int64) time.Duration {
	return max(t, ceilNS(m.free))
}

func (m *leakyQueue) take(_, dep time.Duration, cost int64) {
	m.free = max(m.free, float64(dep)) + float64(cost)*m.p.t
}
