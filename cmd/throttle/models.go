package main

import (
	"fmt"
	"math/big"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
)

// A limitModel decides, for one limit of one key, the requests of a trace in
// arrival order, as one rate-limiting algorithm would. simulate --compare
// runs the same trace through each algorithm, all set to the limit's rate
// and burst.
//
// Only the token bucket is the library. The others are reference models
// written here for the comparison, exact as the library is: integer time
// and rational rates (see params), each rounding the instants it reports
// up to the next whole nanosecond. With
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
		{"fixed window", func(l limitSpec) limitModel { return &fixedWindow{p: paramsOf(l)} }},
		{"sliding window log", func(l limitSpec) limitModel { return &slidingLog{p: paramsOf(l)} }},
		{"sliding window counter", func(l limitSpec) limitModel { return &slidingCounter{p: paramsOf(l)} }},
		{"leaky bucket queue (pacing)", func(l limitSpec) limitModel { return &leakyQueue{p: paramsOf(l)} }},
	}
}

// params are a limit's burst B, and its rate as R tokens every P ns. The
// models count time in units of 1/R ns, so that a token, P/R ns, is P of
// them and a window, B*P/R ns, is B*P: integers, whatever the rate, where
// float64 nanoseconds drift for a token of a fractional number of them
// (7 a second: 142857142.857... ns).
type params struct {
	burst int64
	p, r  uint64 // P and R
	bp    u128   // B*P, the window in 1/R ns
}

func paramsOf(l limitSpec) params {
	p, r := uint64(l.rate.Period()), uint64(l.rate.Tokens())
	return params{burst: l.capacity, p: p, r: r, bp: mul(uint64(l.capacity), p)}
}

// scaled returns the instant t in 1/R ns.
func (p params) scaled(t time.Duration) u128 { return mul(uint64(t), p.r) }

// tokens returns n tokens' worth of time in 1/R ns.
func (p params) tokens(n int64) u128 { return mul(uint64(n), p.p) }

// instant rounds x, in 1/R ns, up to a whole nanosecond.
func (p params) instant(x u128) time.Duration { return x.ceilDiv(p.r) }

// window returns the window of fixed windows [n*W, (n+1)*W) holding t.
func (p params) window(t time.Duration) uint64 { return p.scaled(t).floorDiv(p.bp) }

// windowStart returns the first nanosecond of window n.
func (p params) windowStart(n uint64) time.Duration {
	if p.bp.hi == 0 {
		return mul(n, p.bp.lo).ceilDiv(p.r) // the common case, in 128 bits
	}
	return bigInstant(new(big.Int).Mul(new(big.Int).SetUint64(n), p.bp.big()), new(big.Int).SetUint64(p.r))
}

// bigInstant returns num/den rounded up, saturating at never.
func bigInstant(num, den *big.Int) time.Duration {
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > int64(never) {
		return never
	}
	return time.Duration(q.Int64())
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
// other terms, so it decides as the bucket does, exactly.
type gcra struct {
	p   params
	tat u128 // in 1/R ns
}

func (m *gcra) ready(t time.Duration, cost int64) time.Duration {
	need := m.p.tokens(m.p.burst - cost)
	if !need.less(m.tat) {
		return t
	}
	return max(t, m.p.instant(m.tat.minus(need)))
}

func (m *gcra) leave(t time.Duration, _ int64) time.Duration { return t }

func (m *gcra) take(t, _ time.Duration, cost int64) {
	m.tat = maxU(m.tat, m.p.scaled(t)).plus(m.p.tokens(cost))
}

// fixedWindow counts the tokens admitted in windows [n*W, (n+1)*W) from
// time 0 of the trace and admits while the count stays within the burst:
// up to twice the burst passes around a window's end.
type fixedWindow struct {
	p     params
	n     uint64 // window of count
	count int64
	any   bool // count is of window n
}

func (m *fixedWindow) ready(t time.Duration, cost int64) time.Duration {
	if !m.any || m.p.window(t) != m.n || m.count+cost <= m.p.burst {
		return t
	}
	return max(t+1, m.p.windowStart(m.n+1))
}

func (m *fixedWindow) leave(t time.Duration, _ int64) time.Duration { return t }

func (m *fixedWindow) take(t, _ time.Duration, cost int64) {
	if n := m.p.window(t); !m.any || n != m.n {
		m.n, m.count, m.any = n, 0, true
	}
	m.count += cost
}

// slidingLog keeps every admitted request of the last W and admits while
// their tokens stay within the burst: exact, at a memory cost of one entry
// per request in the window.
type slidingLog struct {
	p     params
	log   []logEntry // oldest first
	first int        // entries before first have left the window
	sum   int64      // tokens of log[first:]
}

type logEntry struct {
	t    time.Duration
	cost int64
}

// gone reports whether a request at e has left the window (t-W, t]: t-e
// >= W, in 1/R ns (t-e)*R >= B*P.
func (m *slidingLog) gone(e, t time.Duration) bool {
	return t >= e && !m.p.scaled(t-e).less(m.p.bp)
}

// prune drops the entries that left the window (t-W, t].
func (m *slidingLog) prune(t time.Duration) {
	for m.first < len(m.log) && m.gone(m.log[m.first].t, t) {
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
	excess := m.sum + cost - m.p.burst
	if excess <= 0 {
		return t
	}
	// Wait until enough of the oldest entries leave: e leaves at the
	// first whole nanosecond at least W after it.
	w := m.p.instant(m.p.bp)
	for _, e := range m.log[m.first:] {
		excess -= e.cost
		if excess <= 0 {
			if e.t > never-w {
				return never
			}
			return max(t, e.t+w)
		}
	}
	return never // cost above the burst, which simulate refuses before
}

func (m *slidingLog) leave(t time.Duration, _ int64) time.Duration { return t }

func (m *slidingLog) take(t, _ time.Duration, cost int64) {
	m.prune(t)
	m.log = append(m.log, logEntry{t, cost})
	m.sum += cost
}

// slidingCounter is the weighted two-window approximation of the sliding
// log: fixed windows as fixedWindow, but a request is admitted while the
// previous window's count, weighted by the share of it still inside the
// trailing window W, plus the current window's count stays within the
// burst. Two counters a key, whatever the traffic.
type slidingCounter struct {
	p         params
	n         uint64 // window of cur
	any       bool   // a request was taken: n, prev and cur hold
	prev, cur int64
}

// counts returns the previous and the current window's counts at window n.
func (m *slidingCounter) counts(n uint64) (prev, cur int64) {
	switch {
	case !m.any:
		return 0, 0
	case n == m.n:
		return m.prev, m.cur
	case n == m.n+1:
		return m.cur, 0
	}
	return 0, 0
}

func (m *slidingCounter) ready(t time.Duration, cost int64) time.Duration {
	for n := m.p.window(t); ; n++ {
		prev, cur := m.counts(n)
		// The estimate prev*(W-x)/W + cur, x the time into the window,
		// falls as x grows: the cost fits once prev*(W-x) <= room*W, at
		// x = W*(prev-room)/prev.
		room := m.p.burst - cur - cost
		if room < 0 {
			continue // not before the next window
		}
		var at time.Duration
		if prev > room {
			// At t*R >= n*B*P + B*P*(prev-room)/prev: t >= B*P*(n*prev +
			// prev - room) / (R*prev).
			k := mul(n, uint64(prev)).plus(u128{lo: uint64(prev - room)})
			if d := mul(m.p.r, uint64(prev)); k.hi == 0 && m.p.bp.hi == 0 && d.hi == 0 {
				at = mul(k.lo, m.p.bp.lo).ceilDiv(d.lo) // the common case, in 128 bits
			} else {
				at = bigInstant(new(big.Int).Mul(k.big(), m.p.bp.big()), d.big())
			}
		} else {
			at = m.p.windowStart(n)
		}
		at = max(t, at)
		if at == never || m.p.window(at) == n {
			return at
		}
	}
}

func (m *slidingCounter) leave(t time.Duration, _ int64) time.Duration { return t }

func (m *slidingCounter) take(t, _ time.Duration, cost int64) {
	n := m.p.window(t)
	m.prev, m.cur = m.counts(n)
	m.n, m.any = n, true
	m.cur += cost
}

// leakyQueue is the leaky bucket as a queue: admitted requests leave one
// after the other, each cost*T after the one before (at once when the
// queue is empty), so nothing ever leaves in a burst; a request is
// admitted while the tokens queued ahead of it and its own fit in the
// burst, the queue's size. It is what throttle.New(1, rate) does (a bucket of capacity 1 paces), with a queue.
type leakyQueue struct {
	p    params
	free u128 // when the queue is empty again, in 1/R ns
}

func (m *leakyQueue) ready(t time.Duration, cost int64) time.Duration {
	need := m.p.tokens(m.p.burst - cost)
	if !need.less(m.free) {
		return t
	}
	return max(t, m.p.instant(m.free.minus(need)))
}

func (m *leakyQueue) leave(t time.Duration, _ int64) time.Duration {
	return max(t, m.p.instant(m.free))
}

func (m *leakyQueue) take(t, dep time.Duration, cost int64) {
	// The queue runs on its own exact time: the request leaves at the
	// later of t and free, and a departure reported at the whole
	// nanosecond after that is that instant, rounded; one held later (by
	// another limit, or the key's previous request) restarts the queue
	// there.
	base := maxU(m.free, m.p.scaled(t))
	if m.p.instant(base) != dep {
		base = maxU(base, m.p.scaled(dep))
	}
	m.free = base.plus(m.p.tokens(cost))
}
