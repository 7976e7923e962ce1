package main

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
)

// The reference models of this file follow each algorithm's definition in
// math/big.Rat: time in rational nanoseconds, a token every P/R ns, a
// window of B*P/R ns, every instant reported rounded up to a whole
// nanosecond. The models of models.go must decide exactly as they do.

func ratOf(t time.Duration) *big.Rat { return new(big.Rat).SetInt64(int64(t)) }

// ceilRat rounds x up to a whole nanosecond.
func ceilRat(x *big.Rat) time.Duration {
	q, m := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return never
	}
	return time.Duration(q.Int64())
}

func floorRat(x *big.Rat) *big.Int {
	q := new(big.Int).Div(x.Num(), x.Denom()) // Euclidean: floor for a positive denominator
	return q
}

type exactParams struct {
	burst int64
	t, w  *big.Rat // a token's time and the window's, in ns
}

func exactOf(l limitSpec) exactParams {
	t := big.NewRat(int64(l.rate.Period()), l.rate.Tokens())
	return exactParams{burst: l.capacity, t: t, w: new(big.Rat).Mul(t, new(big.Rat).SetInt64(l.capacity))}
}

func ratMax(a, b *big.Rat) *big.Rat {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}

func tokensTime(p exactParams, n int64) *big.Rat {
	return new(big.Rat).Mul(p.t, new(big.Rat).SetInt64(n))
}

// exactBucket: a level that refills by 1/T a nanosecond up to B; a cost is
// admitted when the level covers it.
type exactBucket struct {
	p     exactParams
	level *big.Rat
	last  time.Duration
}

func (m *exactBucket) at(t time.Duration) *big.Rat {
	l := new(big.Rat).Add(m.level, new(big.Rat).Quo(ratOf(t-m.last), m.p.t))
	if b := new(big.Rat).SetInt64(m.p.burst); l.Cmp(b) > 0 {
		l = b
	}
	return l
}

func (m *exactBucket) ready(t time.Duration, cost int64) time.Duration {
	l := m.at(t)
	short := new(big.Rat).Sub(new(big.Rat).SetInt64(cost), l)
	if short.Sign() <= 0 {
		return t
	}
	return t + ceilRat(new(big.Rat).Mul(short, m.p.t))
}
func (m *exactBucket) leave(t time.Duration, _ int64) time.Duration { return t }
func (m *exactBucket) take(t, _ time.Duration, cost int64) {
	m.level = new(big.Rat).Sub(m.at(t), new(big.Rat).SetInt64(cost))
	m.last = t
}

// exactFixed: windows [nW, (n+1)W) counted from 0.
type exactFixed struct {
	p     exactParams
	n     *big.Int
	count int64
}

func (m *exactFixed) window(t time.Duration) *big.Int {
	return floorRat(new(big.Rat).Quo(ratOf(t), m.p.w))
}

func (m *exactFixed) ready(t time.Duration, cost int64) time.Duration {
	if m.n == nil || m.window(t).Cmp(m.n) != 0 || m.count+cost <= m.p.burst {
		return t
	}
	next := new(big.Int).Add(m.n, big.NewInt(1))
	return ceilRat(new(big.Rat).Mul(new(big.Rat).SetInt(next), m.p.w))
}
func (m *exactFixed) leave(t time.Duration, _ int64) time.Duration { return t }
func (m *exactFixed) take(t, _ time.Duration, cost int64) {
	if n := m.window(t); m.n == nil || n.Cmp(m.n) != 0 {
		m.n, m.count = n, 0
	}
	m.count += cost
}

// exactLog: the requests of (t-W, t].
type exactLog struct {
	p   exactParams
	log []exactEntry
}

func (m *exactLog) inside(e exactEntry, t time.Duration) bool {
	return ratOf(t-e.t).Cmp(m.p.w) < 0
}

func (m *exactLog) ready(t time.Duration, cost int64) time.Duration {
	sum := cost
	for _, e := range m.log {
		if m.inside(e, t) {
			sum += e.cost
		}
	}
	if sum <= m.p.burst {
		return t
	}
	for _, e := range m.log {
		if !m.inside(e, t) {
			continue
		}
		sum -= e.cost
		if sum <= m.p.burst {
			return max(t, ceilRat(new(big.Rat).Add(ratOf(e.t), m.p.w)))
		}
	}
	return never
}
func (m *exactLog) leave(t time.Duration, _ int64) time.Duration { return t }
func (m *exactLog) take(t, _ time.Duration, cost int64) {
	m.log = append(m.log, exactEntry{t, cost})
}

// exactCounter: prev*(1-x/W) + cur, x the time into the current window.
type exactCounter struct {
	p         exactParams
	n         *big.Int
	prev, cur int64
}

func (m *exactCounter) window(t time.Duration) *big.Int {
	return floorRat(new(big.Rat).Quo(ratOf(t), m.p.w))
}

func (m *exactCounter) counts(n *big.Int) (int64, int64) {
	switch {
	case m.n == nil:
		return 0, 0
	case n.Cmp(m.n) == 0:
		return m.prev, m.cur
	case n.Cmp(new(big.Int).Add(m.n, big.NewInt(1))) == 0:
		return m.cur, 0
	}
	return 0, 0
}

// fits reports whether cost fits at t.
func (m *exactCounter) fits(t time.Duration, cost int64) bool {
	n := m.window(t)
	prev, cur := m.counts(n)
	x := new(big.Rat).Sub(ratOf(t), new(big.Rat).Mul(new(big.Rat).SetInt(n), m.p.w))
	share := new(big.Rat).Sub(big.NewRat(1, 1), new(big.Rat).Quo(x, m.p.w))
	est := new(big.Rat).Add(new(big.Rat).Mul(new(big.Rat).SetInt64(prev), share), new(big.Rat).SetInt64(cur+cost))
	return est.Cmp(new(big.Rat).SetInt64(m.p.burst)) <= 0
}

func (m *exactCounter) ready(t time.Duration, cost int64) time.Duration {
	if m.fits(t, cost) {
		return t
	}
	// The estimate falls within a window and drops at a window's start:
	// search each window from its first nanosecond at or after t.
	for n := m.window(t); ; n.Add(n, big.NewInt(1)) {
		start := max(t, ceilRat(new(big.Rat).Mul(new(big.Rat).SetInt(n), m.p.w)))
		end := ceilRat(new(big.Rat).Mul(new(big.Rat).SetInt(new(big.Int).Add(n, big.NewInt(1))), m.p.w)) // first ns of the next
		if start >= end || !m.fits(end-1, cost) {
			continue
		}
		lo, hi := start, end-1 // fits at hi; find the first
		if m.fits(lo, cost) {
			return lo
		}
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if m.fits(mid, cost) {
				hi = mid
			} else {
				lo = mid
			}
		}
		return hi
	}
}
func (m *exactCounter) leave(t time.Duration, _ int64) time.Duration { return t }
func (m *exactCounter) take(t, _ time.Duration, cost int64) {
	n := m.window(t)
	m.prev, m.cur = m.counts(n)
	m.n = n
	m.cur += cost
}

// exactQueue: requests leave one after the other, cost*T apart; a request
// is admitted while the tokens queued at its arrival and its own fit in B.
type exactQueue struct {
	p    exactParams
	free *big.Rat
}

func (m *exactQueue) ready(t time.Duration, cost int64) time.Duration {
	at := new(big.Rat).Sub(m.free, tokensTime(m.p, m.p.burst-cost))
	return max(t, ceilRat(at))
}
func (m *exactQueue) leave(t time.Duration, _ int64) time.Duration {
	return ceilRat(ratMax(ratOf(t), m.free))
}
func (m *exactQueue) take(t, _ time.Duration, cost int64) {
	m.free = new(big.Rat).Add(ratMax(ratOf(t), m.free), tokensTime(m.p, cost))
}

func exactModels(l limitSpec) map[string]limitModel {
	p := exactOf(l)
	return map[string]limitModel{
		"token bucket (throttle)":     &exactBucket{p: p, level: new(big.Rat).SetInt64(p.burst)},
		"GCRA":                        &exactBucket{p: p, level: new(big.Rat).SetInt64(p.burst)},
		"fixed window":                &exactFixed{p: p},
		"sliding window log":          &exactLog{p: p},
		"sliding window counter":      &exactCounter{p: p},
		"leaky bucket queue (pacing)": &exactQueue{p: p, free: new(big.Rat)},
	}
}

type arrival struct {
	t    time.Duration
	cost int64
}

// decide runs one key's arrivals through m as compare does for one limit,
// returning each request's departure, or -1 for a refusal.
func decide(m limitModel, trace []arrival, reject bool) []time.Duration {
	var out []time.Duration
	free := time.Duration(0)
	for _, a := range trace {
		at := a.t
		if reject {
			if m.ready(at, a.cost) != at {
				out = append(out, -1)
				continue
			}
		} else {
			var err error
			if at, err = readyAll([]limitModel{m}, max(at, free), []int64{a.cost}); err != nil {
				panic(err)
			}
		}
		dep := max(at, m.leave(at, a.cost))
		m.take(at, dep, a.cost)
		free = dep
		out = append(out, dep)
	}
	return out
}

// TestModelsExact runs random traces through every model of simulate
// --compare and through the exact reference models, in reject and in wait
// mode, on rates whose token takes a fractional number of nanoseconds.
func TestModelsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 4))
	rates := []throttle.Rate{
		throttle.Per(7, time.Second), throttle.Per(3, time.Second), throttle.Per(10, time.Second),
		throttle.Per(7, 3*time.Nanosecond), throttle.Per(1000, time.Minute), throttle.Per(13, 7*time.Millisecond),
	}
	// Issue 29's trace: three at 0 on 7/1s with a burst of 3.
	cases := []struct {
		l     limitSpec
		trace []arrival
	}{{limitSpec{name: "requests", rate: throttle.Per(7, time.Second), capacity: 3}, []arrival{{0, 1}, {0, 1}, {0, 1}}}}
	for range 300 {
		r := rates[rng.IntN(len(rates))]
		l := limitSpec{name: "requests", rate: r, capacity: 1 + rng.Int64N(5)}
		token := int64(r.Period()) / r.Tokens()
		var tr []arrival
		at := time.Duration(0)
		for range 40 {
			// Gaps around the token time, so that decisions fall on its
			// fractions; sometimes a multiple of the window exactly.
			switch rng.IntN(4) {
			case 0:
			case 1:
				at += time.Duration(rng.Int64N(token*2 + 2))
			case 2:
				at += time.Duration(rng.Int64N(3)) * r.Period()
			case 3:
				at = time.Duration(int64(at)/int64(r.Period())+1) * r.Period()
			}
			tr = append(tr, arrival{at, 1 + rng.Int64N(l.capacity)})
		}
		cases = append(cases, struct {
			l     limitSpec
			trace []arrival
		}{l, tr})
	}
	for i, c := range cases {
		for _, reject := range []bool{true, false} {
			exact := exactModels(c.l)
			for _, alg := range algorithms() {
				got := decide(alg.make(c.l), c.trace, reject)
				want := decide(exact[alg.name], c.trace, reject)
				for j := range want {
					if got[j] != want[j] {
						t.Fatalf("case %d, %v burst %d, reject %v: %s decides request %d (%v, cost %d) as %v, exactly %v\ntrace %v",
							i, c.l.rate, c.l.capacity, reject, alg.name, j, c.trace[j].t, c.trace[j].cost, fmtDecision(got[j]), fmtDecision(want[j]), c.trace[:j+1])
					}
				}
			}
		}
	}
}

func fmtDecision(d time.Duration) string {
	if d < 0 {
		return "refused"
	}
	return fmt.Sprintf("admitted, leaving at %v", d)
}

type exactEntry struct {
	t    time.Duration
	cost int64
}
