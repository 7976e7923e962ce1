package statuspage

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle/auto"
)

// entry is one registered limiter: its Gate, the history of its limits
// and its recent events.
type entry struct {
	name  string
	clock interface{ Now() time.Time }

	mu       sync.Mutex
	gate     throttle.Gate
	meter    throttle.Meter
	auto     *auto.Limiter
	limits   []throttle.Limit
	hist     []ring    // one per limit, in Limits order
	prev     []float64 // each limit's level at the last sample
	activity float64   // spent over the history, and waiters: the order of the page
	events   events

	// spent counts, without the lock, what grants and settlements spent
	// since the last sample: a grant is the one event on the hot path of
	// an observed limiter.
	spent    atomic.Pointer[counters]
	observed atomic.Bool // events arrive: spending is counted, not estimated
}

// counters are what each limit, by name, spent since the last sample.
type counters struct {
	names []string
	n     []atomic.Int64
}

// add counts cost on the limit named name.
func (c *counters) add(name string, cost int64) {
	for i, n := range c.names {
		if n == name {
			c.n[i].Add(cost)
			return
		}
	}
}

func newEntry(name string, clock interface{ Now() time.Time }) *entry {
	return &entry{name: name, clock: clock}
}

// setGate registers g, with a history of keep samples a limit at most.
func (e *entry) setGate(g throttle.Gate, keep int) {
	limits := g.Limits()
	keep = min(keep, (maxHistoryBytes-int(unsafe.Sizeof(events{})))/(sampleBytes*max(len(limits), 1)))
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gate, e.limits = g, limits
	e.meter, _ = g.(throttle.Meter)
	e.hist = make([]ring, len(limits))
	for i := range e.hist {
		e.hist[i] = newRing(keep)
	}
	e.prev = make([]float64, len(limits))
	c := &counters{names: make([]string, len(limits)), n: make([]atomic.Int64, len(limits))}
	for i, l := range limits {
		c.names[i] = l.Name
	}
	e.spent.Store(c)
	e.activity = 0
}

// Observe records e for the page: it is the Observer of Page.Observer.
func (e *entry) Observe(ev throttle.Event) {
	if !e.observed.Load() {
		e.observed.Store(true)
	}
	c := e.spent.Load()
	switch ev.Kind {
	case throttle.EventGranted:
		if c != nil {
			c.add(ev.Limit, ev.Cost)
		}
		return
	case throttle.EventSettled:
		if c != nil {
			c.add(ev.Limit, ev.Cost-ev.Estimate)
		}
		if ev.Cost == ev.Estimate {
			return
		}
	}
	now := e.clock.Now()
	e.mu.Lock()
	e.events.add(now, ev)
	e.mu.Unlock()
}

// sample records the levels and spending of the entry's limits at now,
// every after the last sample; buf is scratch.
func (e *entry) sample(now time.Time, every time.Duration, buf []throttle.LimitStatus) []throttle.LimitStatus {
	e.mu.Lock()
	m := e.meter
	e.mu.Unlock()
	if m == nil {
		return buf
	}
	buf = m.Status(buf)
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.spent.Load()
	if len(buf) != len(e.hist) || c == nil || len(c.n) != len(buf) {
		return buf
	}
	e.activity = 0
	observed := e.observed.Load()
	for i, st := range buf {
		spent := float64(c.n[i].Swap(0))
		if !observed {
			spent = estimateSpent(e.prev[i], st, every)
		}
		e.prev[i] = st.Level
		e.hist[i].push(now, float32(st.Level), float32(spent))
		e.activity += e.hist[i].total + float64(st.Waiting)
	}
	return buf
}

// estimateSpent is what a limit spent over every that took its level from
// prev to st's, when no event says: its refill, up to its capacity, less
// what is left. It misses what was spent of a refill that a full limit
// would have lost.
func estimateSpent(prev float64, st throttle.LimitStatus, every time.Duration) float64 {
	refill := 0.0
	if p := st.Rate.Period(); p > 0 {
		refill = float64(st.Rate.Tokens()) * float64(every) / float64(p)
	}
	return max(min(prev+refill, float64(st.Capacity))-st.Level, 0)
}

// sampleBytes is the size of one limit's sample: a level and a spending.
const sampleBytes = 8

// ring is a limit's last samples, oldest overwritten.
type ring struct {
	level, spent []float32
	next, n      int
	last         time.Time // the instant of the newest sample
	total        float64   // the sum of spent
}

func newRing(keep int) ring {
	return ring{level: make([]float32, keep), spent: make([]float32, keep)}
}

func (r *ring) push(at time.Time, level, spent float32) {
	if len(r.level) == 0 {
		return
	}
	if r.n == len(r.level) {
		r.total -= float64(r.spent[r.next])
	} else {
		r.n++
	}
	r.level[r.next], r.spent[r.next] = level, spent
	r.total += float64(spent)
	r.next = (r.next + 1) % len(r.level)
	r.last = at
}

// series returns the samples oldest first.
func (r *ring) series() (level, spent []float32) {
	level, spent = make([]float32, 0, r.n), make([]float32, 0, r.n)
	start := (r.next - r.n + len(r.level)) % max(len(r.level), 1)
	for k := range r.n {
		j := (start + k) % len(r.level)
		level, spent = append(level, r.level[j]), append(spent, r.spent[j])
	}
	return level, spent
}

// maxEvents is how many recent events a limiter keeps.
const maxEvents = 32

// events is a limiter's recent events, oldest overwritten.
type events struct {
	buf  [maxEvents]record
	next int
	n    int
}

// record is an event as the page shows it.
type record struct {
	At     time.Time     `json:"at"`
	Kind   string        `json:"kind"`
	Limit  string        `json:"limit"`
	Cost   int64         `json:"cost"`
	Est    int64         `json:"estimate,omitempty"`
	Wait   time.Duration `json:"waitNs,omitempty"`
	Why    string        `json:"why,omitempty"`
	Reason string        `json:"reason,omitempty"`
}

var kindNames = map[throttle.EventKind]string{
	throttle.EventGranted: "granted", throttle.EventRejected: "refused", throttle.EventCancelled: "cancelled",
	throttle.EventPaused: "paused", throttle.EventSettled: "settled", throttle.EventTuned: "tuned",
	throttle.EventThreshold: "threshold",
}

func (es *events) add(now time.Time, ev throttle.Event) {
	r := record{At: now, Kind: kindNames[ev.Kind], Limit: ev.Limit, Cost: ev.Cost, Est: ev.Estimate, Wait: ev.Wait, Reason: ev.Reason}
	if ev.Why != nil {
		r.Why = explain(ev.Why)
	}
	if ev.Kind == throttle.EventPaused {
		r.Wait = 0
		r.Why = "until " + ev.Until.UTC().Format(time.RFC3339Nano)
	}
	if ev.Kind == throttle.EventThreshold {
		r.Why = fmt.Sprintf("%g%% of %d spent, until %s", ev.Threshold*100, ev.Estimate, ev.Until.UTC().Format(time.RFC3339))
	}
	es.buf[es.next] = r
	es.next = (es.next + 1) % maxEvents
	es.n = min(es.n+1, maxEvents)
}

// list returns the events newest first.
func (es *events) list() []record {
	out := make([]record, 0, es.n)
	for k := 1; k <= es.n; k++ {
		out = append(out, es.buf[(es.next-k+maxEvents)%maxEvents])
	}
	return out
}

// explain says what w says, for the page: not an error's words, since the
// call may have been served.
func explain(w *throttle.WaitError) string {
	s := fmt.Sprintf("limit %q bound a wait of %v", w.Limit, w.Wait)
	if w.Ahead > 0 {
		s += fmt.Sprintf(" behind %d queued", w.Ahead)
	}
	if !w.Paused.IsZero() {
		s += ", paused until " + w.Paused.UTC().Format(time.RFC3339Nano)
		if w.Cause != "" {
			s += " by " + w.Cause
		}
	}
	return s
}

// bytes is the memory the entry's history and events hold: what
// maxHistoryBytes bounds.
func (e *entry) bytes() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := int(unsafe.Sizeof(e.events))
	for _, r := range e.hist {
		n += (cap(r.level) + cap(r.spent)) * 4
	}
	return n
}
