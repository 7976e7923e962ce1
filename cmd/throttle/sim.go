package main

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/cmd/throttle/internal/trace"
)

// simConfig is what simulate runs.
type simConfig struct {
	limits   []limitSpec
	reject   bool // non-blocking: a request that does not fit is rejected
	chart    bool // collect the chart's series
	compare  bool // run the trace through every algorithm too (--compare)
	sweepMin int  // keys held before idle ones are first swept out
}

// simulator replays requests one by one. It needs no goroutine: requests
// of a key are served in arrival order, so in wait mode request i is granted
// at the first instant at or after max(its arrival, the grant of the key's
// previous request) at which every limit covers it, which WaitTime gives
// exactly. Each key has its own limits on its own fake clock, because grant
// instants of different keys do not come in order.
type simulator struct {
	cfg   simConfig
	keys  map[string]*keyState
	sweep int // sweep idle keys once this many are held
	costs []int64
	waits []time.Duration // per limit, for the request being decided
	stats simStats

	before, after []float64 // levels around a decision, in % of capacity

	// decided, when set, sees every decision: for tests.
	decided     func(arrival, at time.Duration, ok bool)
	lastArrival time.Duration
	series      *series
	drawn       []string  // keys with level lines on the chart, in order
	cmp         *comparer // with compare
}

// keyLines is how many keys get level lines of their own on the chart:
// the first keys of the trace. One line through the levels of several keys
// would zigzag between them.
const keyLines = 3

// keyState is one key's limits and where its clock stands.
type keyState struct {
	clock      *clockwork.FakeClock
	lim        *throttle.Limiter
	bs         []*throttle.Bucket
	now        time.Duration   // the clock, as an offset from the epoch
	free       time.Duration   // wait mode: grant of the key's previous request
	lastTake   time.Duration   // instant of the key's latest grant
	name       string          // the key
	last       time.Duration   // instant of its latest decision
	emptyUntil []time.Duration // per limit: when it next holds a whole token
	line       int             // its first level line on the chart; -1 for none
}

// simStats is what the summary reports.
type simStats struct {
	requests, accepted, rejected, waited uint64
	waits                                hist
	started                              bool
	first, end                           time.Duration // first arrival, last decision
	spent                                []u128        // tokens taken, per limit
	empty                                []u128        // ns below one token, per limit, summed over keys
	// bound counts, per limit, the requests it held up: in wait mode
	// those that waited for its tokens (it was among the last to cover
	// them), in reject mode those refused because it did not cover them.
	bound []uint64
	// short is, per limit, the time requests waited for its tokens (wait
	// mode), summed over keys.
	short []u128
	keys  keySet // distinct keys, with their spans
}

// epoch is time 0 of a trace on every key's fake clock.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// never stands for an instant that does not come, such as the next token of
// a limit that never refills.
const never = time.Duration(math.MaxInt64)

func newSimulator(cfg simConfig) *simulator {
	if cfg.sweepMin <= 0 {
		cfg.sweepMin = 4096
	}
	s := &simulator{
		cfg:   cfg,
		keys:  make(map[string]*keyState),
		sweep: cfg.sweepMin,
		costs: make([]int64, len(cfg.limits)),
		waits: make([]time.Duration, len(cfg.limits)),
	}
	s.stats.spent = make([]u128, len(cfg.limits))
	s.stats.empty = make([]u128, len(cfg.limits))
	s.stats.bound = make([]uint64, len(cfg.limits))
	s.stats.short = make([]u128, len(cfg.limits))
	s.stats.keys = newKeySet()
	if cfg.compare {
		s.cmp = newComparer(cfg.limits, cfg.reject, cfg.chart)
	}
	if cfg.chart {
		periods := make([]time.Duration, len(cfg.limits))
		for i, l := range cfg.limits {
			periods[i] = l.rate.Period()
		}
		s.series = newSeries(keyLines*len(cfg.limits), chartBins, periods)
		s.before = make([]float64, len(cfg.limits))
		s.after = make([]float64, len(cfg.limits))
	}
	return s
}

func (s *simulator) newKey() (*keyState, error) {
	k := &keyState{
		clock:      clockwork.NewFakeClockAt(epoch),
		bs:         make([]*throttle.Bucket, len(s.cfg.limits)),
		emptyUntil: make([]time.Duration, len(s.cfg.limits)),
	}
	for i, l := range s.cfg.limits {
		b, err := throttle.New(l.capacity, l.rate, throttle.WithClock(k.clock), throttle.WithName(l.name))
		if err != nil {
			return nil, err
		}
		k.bs[i] = b
	}
	lim, err := throttle.NewLimiter(k.bs...)
	if err != nil {
		return nil, err
	}
	k.lim = lim
	return k, nil
}

// advance moves the key's clock forward to t.
func (k *keyState) advance(t time.Duration) {
	if t > k.now {
		k.clock.Advance(t - k.now)
		k.now = t
	}
}

// add decides one request of a trace; line names it in errors.
func (s *simulator) add(req trace.Request, line int) error {
	for i, l := range s.cfg.limits {
		s.costs[i] = req.Cost
		if l.perRequest {
			s.costs[i] = 1
		}
		if s.costs[i] > l.capacity {
			return usagef("trace line %d: cost %d exceeds the burst %d of limit %q", line, s.costs[i], l.capacity, l.name)
		}
	}
	st := &s.stats
	if !st.started {
		st.started, st.first = true, req.Time
		if s.series != nil {
			s.series.origin = req.Time
		}
	}
	st.requests++
	s.lastArrival = req.Time
	k := s.keys[req.Key]
	if k == nil {
		var err error
		if k, err = s.newKey(); err != nil {
			return err
		}
		s.keys[req.Key] = k
		k.name = req.Key
		k.line = s.lineOf(req.Key)
		st.keys.arrive(req.Key, req.Time)
	}

	var ok bool
	var err error
	if s.cfg.reject {
		k.advance(req.Time)
		if ok, err = k.lim.TryAcquire(s.costs...); err != nil {
			return fmt.Errorf("trace line %d: %w", line, err)
		}
		if !ok && len(k.bs) == 1 {
			st.bound[0]++
		} else if !ok {
			for i, b := range k.bs {
				if w, err := b.WaitTime(s.costs[i]); err != nil || w > 0 {
					st.bound[i]++
				}
			}
		}
	} else {
		k.advance(max(req.Time, k.free))
		// Nothing is ever queued, so TryAcquire succeeds exactly when
		// WaitTime would say 0; trying first saves a call.
		if ok, err = k.lim.TryAcquire(s.costs...); err != nil {
			return fmt.Errorf("trace line %d: %w", line, err)
		}
		if !ok {
			// Nothing is queued and levels only rise, so the wait is the
			// longest of the limits' own, and asking each says which held
			// the request up and for how long.
			var w time.Duration
			var err error
			for i, b := range k.bs {
				if s.waits[i], err = b.WaitTime(s.costs[i]); err != nil {
					// The Limiter's error names the limit.
					if _, lerr := k.lim.WaitTime(s.costs...); lerr != nil {
						err = lerr
					}
					break
				}
				w = max(w, s.waits[i])
			}
			if errors.Is(err, throttle.ErrCostExceedsCapacity) {
				return usagef("trace line %d: the request would wait forever: %v", line, err)
			}
			if err != nil {
				return fmt.Errorf("trace line %d: %w", line, err)
			}
			if w > never-k.now {
				return usagef("trace line %d: the request would wait past the year 2292", line)
			}
			for i, wi := range s.waits {
				if wi > 0 {
					st.short[i].add(uint64(wi))
					if wi == w {
						st.bound[i]++
					}
				}
			}
			k.advance(k.now + w)
			if ok, err = k.lim.TryAcquire(s.costs...); err != nil || !ok {
				return fmt.Errorf("trace line %d: internal error: not granted after waiting %v as WaitTime said (%v)", line, w, err)
			}
		}
		k.free = k.now
		wait := k.now - req.Time
		st.waits.record(wait)
		if wait > 0 {
			st.waited++
			if s.series != nil {
				s.series.addWait(k.now, wait)
			}
		}
	}
	t := k.now
	st.end = max(st.end, t)
	k.last = t
	if ok {
		st.accepted++
		for i, b := range k.bs {
			st.spent[i].add(uint64(s.costs[i]))
			st.empty[i].add(uint64(min(k.emptyUntil[i], t) - k.lastTake))
			w, err := b.WaitTime(1)
			if err != nil || w > never-t {
				k.emptyUntil[i] = never
			} else {
				k.emptyUntil[i] = t + w
			}
		}
		k.lastTake = t
	} else {
		st.rejected++
	}
	if s.series != nil {
		s.record(k, t, ok)
	}
	if s.decided != nil {
		s.decided(req.Time, t, ok)
	}
	if len(s.keys) >= s.sweep {
		s.sweepIdle(req.Time)
	}
	if s.cmp != nil {
		return s.cmp.add(req, line, s.costs)
	}
	return nil
}

// record adds a decision to the chart's series.
func (s *simulator) record(k *keyState, t time.Duration, ok bool) {
	// The level is sampled right before and right after the decision: the
	// top and the bottom of the saw tooth.
	for i, b := range k.bs {
		after := b.Status().Level
		c := float64(s.cfg.limits[i].capacity)
		s.after[i] = after / c * 100
		s.before[i] = s.after[i]
		if ok {
			s.before[i] = (after + float64(s.costs[i])) / c * 100
		}
	}
	s.series.add(t, ok, k.line, s.before, s.after, s.costs)
}

// lineOf returns the first level line of key, giving it lines while fewer
// than keyLines keys have them.
func (s *simulator) lineOf(key string) int {
	if s.series == nil {
		return -1
	}
	for i, d := range s.drawn {
		if d == key {
			return i * len(s.cfg.limits)
		}
	}
	if len(s.drawn) == keyLines {
		return -1
	}
	s.drawn = append(s.drawn, key)
	return (len(s.drawn) - 1) * len(s.cfg.limits)
}

// sweepIdle drops every key whose limits are all full at instant now with
// no request of its own still ahead of now. Such a key is exactly a fresh
// one, so dropping it changes no decision; it is what keeps memory bounded
// by the keys active recently rather than by the trace. A sweep runs when
// the number of keys has doubled since the last one, which makes its cost
// amortised O(1) per request.
func (s *simulator) sweepIdle(now time.Duration) {
	for key, k := range s.keys {
		if k.now > now {
			continue
		}
		k.advance(now)
		full := true
		for _, b := range k.bs {
			if w, err := b.WaitTime(b.Status().Capacity); err != nil || w > 0 {
				full = false
				break
			}
		}
		if full {
			s.retire(k, now)
			delete(s.keys, key)
		}
	}
	s.sweep = max(s.cfg.sweepMin, 2*len(s.keys))
}

// retire adds the key's last stretch below one token, up to end, and its
// span.
func (s *simulator) retire(k *keyState, end time.Duration) {
	s.stats.keys.leave(k.name, k.last)
	for i := range k.bs {
		if e := min(k.emptyUntil[i], end); e > k.lastTake {
			s.stats.empty[i].add(uint64(e - k.lastTake))
		}
	}
}

// finish closes the accounts of the keys still held.
func (s *simulator) finish() {
	for key, k := range s.keys {
		s.retire(k, s.stats.end)
		delete(s.keys, key)
	}
}
