package throttle

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle/internal/exact"
)

// This file checks every entry point of a set of buckets sharing one queue
// (Bucket, Limiter, Keyed) against an exact model of the documented
// semantics, with calls interleaved at random on the fake clock: TryAcquire,
// Acquire with short and long deadlines, WaitTime, Settle, SetRate,
// PauseUntil, Drain and cancellation. Only the call under test reads or
// changes the state, so no other call refreshes anything as a side effect
// and hides a bug: the model says what each call must return and when each
// queued waiter must be granted, and the test checks just that.

// qbucket is one bucket of the model, in exact rational arithmetic.
type qbucket struct {
	level    *big.Rat
	last     int64
	capacity int64
	rate     *big.Rat // tokens per nanosecond
	den      int64    // the rate's reduced period: the fraction's denominator
	paused   int64
}

type qwaiter struct {
	id        int
	costs     []int64
	since     int64
	priority  int
	overtaken int
	rsv       *Reservation // a reservation's, nil for an Acquire call
}

// qmodel is a set of buckets with one FIFO queue.
type qmodel struct {
	bs    []*qbucket
	floor int64
	queue []*qwaiter
}

func newQBucket(capacity int64, r Rate) *qbucket {
	b := &qbucket{level: new(big.Rat).SetInt64(capacity), capacity: capacity, paused: noPause}
	b.setRate(r)
	return b
}

func (b *qbucket) setRate(r Rate) {
	b.rate = big.NewRat(r.Tokens(), int64(r.Period()))
	b.den = 1
	if r.Tokens() != 0 {
		b.den = int64(r.Period()) / int64(exact.GCD(uint64(r.Tokens()), uint64(r.Period())))
	}
}

func (b *qbucket) advance(t int64) {
	if t <= b.last {
		return
	}
	capacity := new(big.Rat).SetInt64(b.capacity)
	b.level.Add(b.level, new(big.Rat).Mul(b.rate, new(big.Rat).SetInt64(t-b.last)))
	if b.level.Cmp(capacity) > 0 {
		b.level.Set(capacity)
	}
	b.last = t
}

// readyAt is the first instant at or after last at which the level covers
// cost, rounded up to the nanosecond.
func (b *qbucket) readyAt(cost int64) int64 {
	c := new(big.Rat).SetInt64(cost)
	if b.level.Cmp(c) >= 0 {
		return b.last
	}
	if b.rate.Sign() == 0 || cost > b.capacity {
		return exact.Never
	}
	d := new(big.Rat).Quo(new(big.Rat).Sub(c, b.level), b.rate)
	q, r := new(big.Int).QuoRem(d.Num(), d.Denom(), new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return b.last + q.Int64()
}

func (b *qbucket) clone() *qbucket {
	c := *b
	c.level = new(big.Rat).Set(b.level)
	return &c
}

// instant is when costs can be granted, not before since nor floor.
func (m *qmodel) instant(costs []int64, since, floor int64) int64 {
	t := max(since, floor)
	for i, b := range m.bs {
		if costs[i] > 0 {
			t = max(t, b.paused, b.readyAt(costs[i]))
		}
	}
	return t
}

func (m *qmodel) spend(costs []int64, t int64) {
	for i, b := range m.bs {
		if costs[i] > 0 {
			b.advance(t)
			b.level.Sub(b.level, new(big.Rat).SetInt64(costs[i]))
		}
	}
}

// head is the instant the first waiter is due, never with none.
func (m *qmodel) head() int64 {
	if len(m.queue) == 0 {
		return exact.Never
	}
	w := m.queue[0]
	return m.instant(w.costs, w.since, m.floor)
}

// serve grants every waiter due by now and returns their ids.
func (m *qmodel) serve(now int64) []int {
	var ids []int
	for len(m.queue) > 0 {
		w := m.queue[0]
		t := m.instant(w.costs, w.since, m.floor)
		if t > now {
			break
		}
		m.spend(w.costs, t)
		m.floor = t
		m.queue = m.queue[1:]
		ids = append(ids, w.id)
	}
	return ids
}

func (m *qmodel) covers(costs []int64, now int64) bool {
	for i, b := range m.bs {
		if costs[i] == 0 {
			continue
		}
		b.advance(now)
		if now < b.paused || b.level.Cmp(new(big.Rat).SetInt64(costs[i])) < 0 {
			return false
		}
	}
	return true
}

// project is the instant costs would be granted if queued now at the end.
func (m *qmodel) project(costs []int64, now int64) int64 {
	return m.projectAt(len(m.queue), costs, now)
}

// place is where a waiter of priority p goes in the queue: ahead of those
// of lower priority, passing none passed maxOvertake times, nor a
// reservation.
func (m *qmodel) place(p int) int {
	i := len(m.queue)
	for i > 0 {
		q := m.queue[i-1]
		if q.priority >= p || q.overtaken >= maxOvertake || q.rsv != nil {
			break
		}
		i--
	}
	return i
}

func (m *qmodel) insert(i int, w *qwaiter) {
	for _, q := range m.queue[i:] {
		q.overtaken++
	}
	m.queue = slices.Insert(m.queue, i, w)
}

// projectAt is the instant costs would be granted if queued now at i.
func (m *qmodel) projectAt(i int, costs []int64, now int64) int64 {
	c := &qmodel{floor: m.floor}
	for _, b := range m.bs {
		c.bs = append(c.bs, b.clone())
	}
	for _, w := range m.queue[:i] {
		t := c.instant(w.costs, w.since, c.floor)
		if t == exact.Never {
			return exact.Never
		}
		c.spend(w.costs, t)
		c.floor = t
	}
	return c.instant(costs, now, c.floor)
}

// waitUntil is what WaitTime must report, as an instant.
func (m *qmodel) waitUntil(costs []int64, now int64) int64 {
	if len(m.queue) == 0 {
		if m.covers(costs, now) {
			return now
		}
		return m.instant(costs, now, m.floor)
	}
	return m.project(costs, now)
}

func (m *qmodel) noRefill(costs []int64) bool {
	for i, b := range m.bs {
		if costs[i] > 0 && b.rate.Sign() == 0 {
			return true
		}
	}
	return false
}

// sleepers counts the Acquire calls queued on b: a queued call adds one,
// while reservations, which any call may serve, do not count.
func sleepers(b *Bucket) int {
	g := b.lock()
	defer g.Mu.Unlock()
	n := 0
	for w := g.Head; w != nil; w = w.Next {
		if w.rsv == nil {
			n++
		}
	}
	return n
}

// mres is a reservation made in the trace: at is its grant instant, never
// while it is queued as w.
type mres struct {
	r     *Reservation
	costs []int64
	w     *qwaiter
	at    int64
}

// instantOf is the instant queued w will be granted.
func (m *qmodel) instantOf(w *qwaiter) int64 {
	i := slices.Index(m.queue, w)
	c := &qmodel{floor: m.floor, queue: m.queue[:i]}
	for _, b := range m.bs {
		c.bs = append(c.bs, b.clone())
	}
	return c.projectAt(i, w.costs, w.since)
}

// ptarget is the implementation under test: n buckets behind one queue.
type ptarget struct {
	try     func([]int64) (bool, error)
	wait    func([]int64) (time.Duration, error)
	acquire func(context.Context, []int64) (Permit, error)
	setRate func(int, Rate) error
	pause   func(time.Time)
	drain   func(int, int64)
	reserve func([]int64) (*Reservation, error)
	queued  func() int
	events  *recorder // the buckets' observer
	group   func() *group
}

type plimit struct {
	capacity int64
	rate     Rate
}

func (l plimit) String() string { return fmt.Sprintf("%d@%v", l.capacity, l.rate) }

type presult struct {
	id     int
	permit Permit
	err    error
	at     int64
}

// propertyTargets makes the implementations under test over limits.
var propertyTargets = map[string]func(clockwork.Clock, []plimit) ptarget{
	"Bucket": func(clk clockwork.Clock, ls []plimit) ptarget {
		rec := &recorder{}
		b, _ := New(ls[0].capacity, ls[0].rate, WithClock(clk), WithObserver(rec))
		return ptarget{
			try:  func(c []int64) (bool, error) { return b.TryAcquire(c[0]) },
			wait: func(c []int64) (time.Duration, error) { return b.WaitTime(c[0]) },
			acquire: func(ctx context.Context, c []int64) (Permit, error) {
				return b.AcquirePermit(ctx, c[0])
			},
			setRate: func(_ int, r Rate) error { return b.SetRate(r) },
			reserve: func(c []int64) (*Reservation, error) { return b.Reserve(c[0]) },
			pause:   b.PauseUntil,
			drain:   func(_ int, n int64) { b.Drain(n) },
			queued:  func() int { return sleepers(b) },
			events:  rec,
			group:   func() *group { return b.g.Load() },
		}
	},
	"Limiter": func(clk clockwork.Clock, ls []plimit) ptarget {
		rec := &recorder{}
		var bs []*Bucket
		for i, l := range ls {
			b, _ := New(l.capacity, l.rate, WithClock(clk), WithName(fmt.Sprint(i)), WithObserver(rec))
			bs = append(bs, b)
		}
		l, _ := NewLimiter(bs...)
		return ptarget{
			try:     func(c []int64) (bool, error) { return l.TryAcquire(c...) },
			wait:    func(c []int64) (time.Duration, error) { return l.WaitTime(c...) },
			acquire: func(ctx context.Context, c []int64) (Permit, error) { return l.Acquire(ctx, c...) },
			setRate: func(i int, r Rate) error { return bs[i].SetRate(r) },
			reserve: func(c []int64) (*Reservation, error) { return l.Reserve(c...) },
			pause:   func(t time.Time) { l.PauseUntil(t) },
			drain:   func(i int, n int64) { bs[i].Drain(n) },
			queued:  func() int { return sleepers(bs[0]) },
			events:  rec,
			group:   func() *group { return bs[0].g.Load() },
		}
	},
	"Keyed": func(clk clockwork.Clock, ls []plimit) ptarget {
		rec := &recorder{}
		k := NewKeyed(func(string) []Limit {
			var out []Limit
			for i, l := range ls {
				out = append(out, Limit{Name: fmt.Sprint(i), Capacity: l.capacity, Rate: l.rate})
			}
			return out
		}, WithClock(clk), WithObserver(rec))
		// The key's Limiter, taken only once a call needs one (the first
		// Acquire, say): until then the key stays compact, and a compact
		// key may be dropped and made again, which must change no decision.
		var lim *Limiter
		limiter := func() *Limiter {
			if lim == nil {
				lim = k.Limiter("key")
			}
			return lim
		}
		return ptarget{
			try:     func(c []int64) (bool, error) { return k.TryAcquire("key", c...) },
			wait:    func(c []int64) (time.Duration, error) { return k.WaitTime("key", c...) },
			acquire: func(ctx context.Context, c []int64) (Permit, error) { return k.Acquire(ctx, "key", c...) },
			setRate: func(i int, r Rate) error { return limiter().bs[i].SetRate(r) },
			reserve: func(c []int64) (*Reservation, error) { return limiter().Reserve(c...) },
			pause:   func(t time.Time) { limiter().PauseUntil(t) },
			drain:   func(i int, n int64) { limiter().bs[i].Drain(n) },
			queued:  func() int { return sleepers(limiter().bs[0]) },
			group:   func() *group { return limiter().bs[0].g.Load() },
			events:  rec,
		}
	},
}

// ahead returns mk with every waiter arming its own timer as it queues,
// as on the real clock (see waiter), instead of the head's alone.
func ahead(mk func(clockwork.Clock, []plimit) ptarget) func(clockwork.Clock, []plimit) ptarget {
	return func(clk clockwork.Clock, ls []plimit) ptarget {
		tg := mk(clk, ls)
		tg.group().ahead = true
		return tg
	}
}

func init() {
	propertyTargets["Bucket/ahead"] = ahead(propertyTargets["Bucket"])
	propertyTargets["Limiter/ahead"] = ahead(propertyTargets["Limiter"])
}

func TestPropertyEveryEntryPoint(t *testing.T) {
	seeds, ops := 30, 250
	if testing.Short() || raceEnabled {
		seeds = 8
	}
	for name, mk := range propertyTargets {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(seeds) {
				if !runProperty(t, name, mk, seed, ops) {
					return
				}
			}
		})
	}
}

// runProperty runs one random trace; it reports false once it failed.
func runProperty(t *testing.T, name string, mk func(clockwork.Clock, []plimit) ptarget, seed uint64, ops int) bool {
	rng := rand.New(rand.NewPCG(seed, 12))
	n := 2
	if strings.HasPrefix(name, "Bucket") {
		n = 1
	}
	randRate := func() Rate {
		if rng.IntN(25) == 0 {
			return Per(0, time.Second)
		}
		return Per(rng.Int64N(9)+1, time.Duration(rng.Int64N(int64(time.Second)))+time.Millisecond)
	}
	var ls []plimit
	m := &qmodel{}
	for range n {
		l := plimit{rng.Int64N(8) + 3, randRate()}
		if l.rate.Tokens() == 0 {
			l.rate = Per(3, time.Second)
		}
		ls = append(ls, l)
		m.bs = append(m.bs, newQBucket(l.capacity, l.rate))
	}
	clk := newClock()
	tg := mk(clk, ls)
	var (
		now     int64
		nextID  int
		out     = make(chan presult, 1024)
		cancels = map[int]context.CancelFunc{}
		permits []Permit
		costsOf = map[int][]int64{}
		pending = 0 // goroutines that have not sent their result
		trace   []string

		reservations []*mres
		rsvOf        = map[int]*mres{} // reservations queued, by id

		// early holds results received before the one awaited: a waiter
		// that a cancellation lets through can send its grant before the
		// cancelled call has returned; collect takes it with the grants
		// the model makes next.
		early []presult
	)
	fail := func(format string, args ...any) bool {
		t.Helper()
		t.Errorf("seed %d, limits %v, at %dns: %s\ntrace (last 30):\n%s", seed, ls, now,
			fmt.Sprintf(format, args...), fmtTrace(trace))
		return false
	}
	defer func() {
		for _, c := range cancels {
			c()
		}
		for ; pending > 0; pending-- {
			<-out
		}
	}()
	// advance moves the clock on with the queue's lock held. A waiter's
	// goroutine that woke on a stale tick reads the clock under that lock
	// and may arm a timer, as a duration from what it read: were the clock
	// moved between the two, the timer would be armed past the instant it
	// is for, and the test, which moves the clock exactly to that instant,
	// would wait for ever. On the real clock that is a timer firing a few
	// microseconds late, which costs nothing: grants are made at their
	// instants, not at the wake.
	advance := func(d time.Duration) {
		if tg.group == nil {
			clk.Advance(d)
			return
		}
		g := tg.group()
		g.Mu.Lock()
		clk.Advance(d)
		g.Mu.Unlock()
	}
	// collect receives the results of ids, granted now; reservations
	// have no goroutine, and only take note of their instant.
	collect := func(all []int) bool {
		var ids []int
		for _, id := range all {
			if mr := rsvOf[id]; mr != nil {
				mr.at = now
				delete(rsvOf, id)
			} else {
				ids = append(ids, id)
			}
		}
		got := make([]int, 0, len(ids))
		for range ids {
			var r presult
			if len(early) > 0 {
				r, early = early[0], early[1:]
			} else {
				select {
				case r = <-out:
					pending--
				case <-time.After(10 * time.Second):
					return fail("waiters %v were due and never returned (got %v)", ids, got)
				}
			}
			if r.err != nil || r.at != now {
				return fail("waiter %d returned %v at %dns, want a grant at %dns", r.id, r.err, r.at, now)
			}
			got = append(got, r.id)
			permits = append(permits, r.permit)
			delete(cancels, r.id)
		}
		slices.Sort(got)
		slices.Sort(ids)
		if !slices.Equal(got, ids) {
			return fail("granted %v, want %v", got, ids)
		}
		return true
	}
	randCosts := func() []int64 {
		c := make([]int64, n)
		for i := range c {
			if n > 1 && rng.IntN(4) == 0 {
				continue
			}
			c[i] = rng.Int64N(ls[i].capacity) + 1
		}
		if slices.Max(c) == 0 {
			c[0] = 1
		}
		return c
	}
	for range ops {
		// Time passes: to every instant a waiter is due, then to the next call.
		next := now + rng.Int64N(int64(400*time.Millisecond))
		if rng.IntN(3) == 0 {
			next = now
		}
		for h := m.head(); h <= next; h = m.head() {
			advance(time.Duration(h - now))
			now = h
			trace = append(trace, fmt.Sprintf("%d: due", now))
			if !collect(m.serve(now)) {
				return false
			}
		}
		advance(time.Duration(next - now))
		now = next
		var op string
		switch k := rng.IntN(23); {
		case k >= 20: // Reserve, look at a reservation, or cancel one
			if k == 20 || len(reservations) == 0 {
				c := randCosts()
				m.serve(now)
				id := nextID
				nextID++
				u := m.project(c, now)
				r, err := tg.reserve(c)
				op = fmt.Sprintf("Reserve#%d%v = %v", id, c, err)
				switch {
				case len(m.queue) == 0 && m.covers(c, now):
					m.spend(c, now)
					if err != nil || r.Delay() != 0 {
						return fail("%s, want a grant at once", op)
					}
					reservations = append(reservations, &mres{r: r, costs: c, at: now})
				case u == exact.Never && m.noRefill(c):
					if !errors.Is(err, ErrCostExceedsCapacity) {
						return fail("%s, want ErrCostExceedsCapacity", op)
					}
				default:
					if err != nil {
						return fail("%s", op)
					}
					w := &qwaiter{id: id, costs: c, since: now, rsv: r}
					m.queue = append(m.queue, w)
					mr := &mres{r: r, costs: c, w: w, at: exact.Never}
					reservations = append(reservations, mr)
					rsvOf[id] = mr
				}
				break
			}
			i := rng.IntN(len(reservations))
			mr := reservations[i]
			m.serve(now)
			if k == 21 {
				want := time.Duration(max(mr.at-now, 0))
				if mr.at == exact.Never {
					want = math.MaxInt64 // never granted: behind a limit that does not refill
					if u := m.instantOf(mr.w); u != exact.Never {
						want = time.Duration(u - now)
					}
				}
				op = fmt.Sprintf("Reservation%v.Delay() = %v", mr.costs, mr.r.Delay())
				if d := mr.r.Delay(); d != want {
					return fail("%s, want %v", op, want)
				}
				break
			}
			reservations = slices.Delete(reservations, i, i+1)
			if mr.at == exact.Never {
				m.queue = slices.DeleteFunc(m.queue, func(q *qwaiter) bool { return q == mr.w })
			} else {
				for j, b := range m.bs {
					b.advance(now)
					b.level.Add(b.level, new(big.Rat).SetInt64(mr.costs[j]))
					if capacity := new(big.Rat).SetInt64(b.capacity); b.level.Cmp(capacity) > 0 {
						b.level.Set(capacity)
					}
				}
			}
			op = fmt.Sprintf("Reservation%v.Cancel()", mr.costs)
			mr.r.Cancel()
		case k < 5: // TryAcquire
			c := randCosts()
			m.serve(now)
			want := len(m.queue) == 0 && m.covers(c, now)
			var wantWait time.Duration
			if want {
				m.spend(c, now)
			} else if u := m.waitUntil(c, now); u != exact.Never {
				wantWait = time.Duration(u - now)
			}
			tg.events.take()
			got, err := tg.try(c)
			op = fmt.Sprintf("TryAcquire%v = %v, %v", c, got, err)
			if err != nil || got != want {
				return fail("%s, want %v", op, want)
			}
			if !got {
				for _, e := range tg.events.take() {
					if e.Kind != EventRejected || e.Wait != wantWait {
						return fail("%s reported %+v, want a rejection with a wait of %v", op, e, wantWait)
					}
				}
			}
		case k < 8: // WaitTime
			c := randCosts()
			u := m.waitUntil(c, now)
			d, err := tg.wait(c)
			op = fmt.Sprintf("WaitTime%v = %v, %v", c, d, err)
			if u == exact.Never && m.noRefill(c) {
				if !errors.Is(err, ErrCostExceedsCapacity) {
					return fail("%s, want ErrCostExceedsCapacity", op)
				}
			} else if err != nil || d != time.Duration(u-now) {
				return fail("%s, want %v", op, time.Duration(u-now))
			}
		case k < 13: // Acquire with a short or a long deadline
			c := randCosts()
			m.serve(now)
			prio := 0
			if rng.IntN(3) == 0 {
				prio = rng.IntN(3) - 1
			}
			at := m.place(prio)
			// A short deadline lies near the wait the model expects, so
			// that a wrong projection flips fail fast and queue.
			dl := time.Hour
			if u := m.projectAt(at, c, now); rng.IntN(2) == 0 && u != exact.Never {
				dl = time.Duration(float64(u-now) * (0.5 + rng.Float64()))
			}
			id := nextID
			nextID++
			var want string
			var wantWait time.Duration
			switch u := m.projectAt(at, c, now); {
			case len(m.queue) == 0 && m.covers(c, now):
				m.spend(c, now)
				want = "granted"
			case u == exact.Never && m.noRefill(c):
				want = "no refill"
			case time.Duration(u-now) > dl:
				want, wantWait = "fail fast", time.Duration(u-now)
			default:
				want = "queued"
				m.insert(at, &qwaiter{id: id, costs: c, since: now, priority: prio})
			}
			op = fmt.Sprintf("Acquire#%d%v priority %d deadline %v: want %s %v", id, c, prio, dl, want, wantWait)
			parent, cancel := context.WithCancel(WithPriority(t.Context(), prio))
			ctx := fixedDeadline{parent, clk.Now().Add(dl)}
			before := tg.queued()
			pending++
			go func() {
				p, err := tg.acquire(ctx, c)
				out <- presult{id: id, permit: p, err: err, at: int64(clk.Since(t0))}
			}()
			var r presult
			returned := false
			for !returned && tg.queued() == before {
				select {
				case r = <-out:
					returned = true
					pending--
				default:
					runtime.Gosched()
				}
			}
			if want == "queued" {
				if returned {
					// Queued at the head with its tokens there (it passed
					// waiters of lower priority), it is served at once.
					cancel()
					if ids := m.serve(now); r.err == nil && slices.Equal(ids, []int{id}) && r.at == now {
						permits = append(permits, r.permit)
						break
					}
					return fail("%s: returned %v at once", op, r.err)
				}
				cancels[id] = cancel
				costsOf[id] = c
				break
			}
			cancel()
			if !returned {
				<-out
				pending--
				return fail("%s: queued", op)
			}
			var we *WaitError
			switch want {
			case "granted":
				if r.err != nil {
					return fail("%s: %v", op, r.err)
				}
				permits = append(permits, r.permit)
			case "no refill":
				if !errors.Is(r.err, ErrCostExceedsCapacity) {
					return fail("%s: %v", op, r.err)
				}
			case "fail fast":
				if !errors.As(r.err, &we) || we.Wait != wantWait {
					return fail("%s: %v", op, r.err)
				}
			}
		case k < 14: // cancel a queued waiter
			if len(m.queue) == 0 {
				continue
			}
			i := rng.IntN(len(m.queue))
			w := m.queue[i]
			if w.rsv != nil {
				continue
			}
			m.queue = slices.Delete(m.queue, i, i+1)
			op = fmt.Sprintf("cancel #%d", w.id)
			cancels[w.id]()
			delete(cancels, w.id)
			var r presult
			for {
				r = <-out
				pending--
				if r.id == w.id {
					break
				}
				early = append(early, r)
			}
			if !errors.Is(r.err, context.Canceled) {
				return fail("%s: waiter %d returned %v", op, r.id, r.err)
			}
		case k < 16: // Settle
			if len(permits) == 0 {
				continue
			}
			i := rng.IntN(len(permits))
			p := permits[i]
			permits = slices.Delete(permits, i, i+1)
			actual := make([]int64, n)
			m.serve(now)
			capped := false // a charge past one capacity of debt is cut there, and reported
			for j, b := range m.bs {
				actual[j] = rng.Int64N(ls[j].capacity + 1)
				b.advance(now)
				d := new(big.Rat).SetInt64(actual[j] - p.(*permit).costs[j])
				was := new(big.Rat).Set(b.level)
				b.level.Sub(b.level, d)
				if capacity := new(big.Rat).SetInt64(b.capacity); b.level.Cmp(capacity) > 0 {
					b.level.Set(capacity)
				}
				if floor := new(big.Rat).SetInt64(-b.capacity); b.level.Cmp(floor) < 0 {
					capped = true
					if was.Cmp(floor) < 0 {
						b.level.Set(was)
					} else {
						b.level.Set(floor)
					}
				}
			}
			op = fmt.Sprintf("Settle%v of %v", actual, p.(*permit).costs)
			if err := p.Settle(actual...); (err != nil) != capped || (capped && !errors.Is(err, ErrCostExceedsCapacity)) {
				return fail("%s: %v, capped %v", op, err, capped)
			}
		case k < 17: // SetRate
			i := rng.IntN(n)
			r := randRate()
			m.serve(now)
			b := m.bs[i]
			b.advance(now)
			whole := new(big.Int).Div(b.level.Num(), b.level.Denom()) // floor: Denom > 0
			frac := new(big.Rat).Sub(b.level, new(big.Rat).SetInt(whole))
			b.setRate(r)
			scaled := new(big.Rat).Mul(frac, new(big.Rat).SetInt64(b.den))
			units := new(big.Int).Div(scaled.Num(), scaled.Denom())
			b.level.Add(new(big.Rat).SetInt(whole), new(big.Rat).SetFrac(units, big.NewInt(b.den)))
			ls[i].rate = r // for the failure message
			op = fmt.Sprintf("SetRate(%d, %v)", i, r)
			if err := tg.setRate(i, r); err != nil {
				return fail("%s: %v", op, err)
			}
		case k < 18: // PauseUntil
			until := now + rng.Int64N(int64(time.Second))
			m.serve(now)
			for _, b := range m.bs {
				if until > b.paused {
					b.advance(now)
					b.paused = until
					b.last = max(b.last, until)
				}
			}
			op = fmt.Sprintf("PauseUntil(+%v)", time.Duration(until-now))
			tg.pause(t0.Add(time.Duration(until)))
		default: // Drain
			i := rng.IntN(n)
			rem := rng.Int64N(ls[i].capacity+2) - 1
			m.serve(now)
			b := m.bs[i]
			b.advance(now)
			if r := new(big.Rat).SetInt64(max(rem, 0)); b.level.Cmp(r) > 0 {
				b.level.Set(r)
			}
			op = fmt.Sprintf("Drain(%d, %d)", i, rem)
			tg.drain(i, rem)
		}
		trace = append(trace, fmt.Sprintf("%d: %s", now, op))
		// A change can make waiters due at once.
		if !collect(m.serve(now)) {
			return false
		}
		if len(early) > 0 {
			return fail("%s: waiter %d returned %v, which the model did not grant", op, early[0].id, early[0].err)
		}
	}
	return true
}

func fmtTrace(trace []string) string {
	s := ""
	for _, l := range trace[max(0, len(trace)-30):] {
		s += "  " + l + "\n"
	}
	return s
}
