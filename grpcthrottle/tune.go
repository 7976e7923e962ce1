package grpcthrottle

import (
	"math"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttlekit/throttle"
)

// RecoverAfter is how long a Client keeps a Gate it slowed down at one
// rate before it tries the next step up (see Client: congestion control).
// A step up that the server refuses costs a refused call and halves the
// rate again, so steps are rare: the same hold as redisbucket.TuneHold.
const RecoverAfter = 5 * time.Second

// shareDen is the denominator of a tuned Gate's share of its configured
// rate: the rate is halved down to 1/shareDen of it and raised back by
// steps of 1/shareDen.
const shareDen = 16

// maxTuned bounds the Gates a Client keeps slowed down at once (one per
// key under PerKey): past it, a refusal still pauses and levels its Gate
// but does not slow it down, so that a flood of keys cannot grow the
// Client's memory.
const maxTuned = 1024

// ClientStats counts what a Client did since it was made.
type ClientStats struct {
	Refused  int64 // attempts its servers refused (see Refused)
	Resent   int64 // refused calls it sent again
	Lowered  int64 // times it slowed a Gate down after a refusal
	Raised   int64 // times it raised a slowed Gate a step back
	Restored int64 // slowed Gates it brought back to their configured rates
}

// Stats returns what the Client did since it was made.
func (cl *Client) Stats() ClientStats {
	s := &cl.c.stats
	return ClientStats{
		Refused:  s.refused.Load(),
		Resent:   s.resent.Load(),
		Lowered:  s.lowered.Load(),
		Raised:   s.raised.Load(),
		Restored: s.restored.Load(),
	}
}

type clientStats struct {
	refused, resent, lowered, raised, restored atomic.Int64
}

// tunings is a Client's congestion state: the Gates it slowed down.
type tunings struct {
	n  atomic.Int64 // entries in m: 0, the common case, costs a call nothing
	mu sync.Mutex   // serialises creation against the bound
	m  sync.Map     // gateID -> *tuning
}

// tuning is the state of one slowed Gate.
type tuning struct {
	mu       sync.Mutex
	g        throttle.Gate
	limits   []throttle.Limit   // as configured, when first slowed
	buckets  []*throttle.Bucket // a Limiter's, in limits order; nil for a Tuner
	share    int64              // of shareDen: the rate now, as a share of the configured one
	epoch    uint64             // counts the slow-downs: a call sent before the last one is not new evidence
	changed  time.Time          // of the last change of share
	maxCost  []int64            // the largest cost seen per limit: the capacity is never cut below it
	answers  uint64             // successes and refusals of the Gate seen since it was first refused
	forgiven uint64             // answers when a refusal was last put down to timing; 0 for never
}

// forgiveCalls is how many answers must separate two refusals put down to
// timing: more often, they are evidence of a rate a little too high.
const forgiveCalls = shareDen

// withinSpacing reports whether delay is no longer than the time the
// Gate, at its rate now, takes to refill costs on its slowest limit:
// delay*tokens*share <= cost*period*shareDen on some limit, in exact
// integers.
func (t *tuning) withinSpacing(costs []int64, delay time.Duration) bool {
	for i, lm := range t.limits {
		if i >= len(costs) || costs[i] <= 0 || lm.Rate.Tokens() <= 0 || lm.Rate.Period() <= 0 {
			continue
		}
		d := new(big.Int).Mul(big.NewInt(int64(delay)), big.NewInt(lm.Rate.Tokens()))
		d.Mul(d, big.NewInt(t.share))
		s := new(big.Int).Mul(big.NewInt(costs[i]), big.NewInt(int64(lm.Rate.Period())))
		s.Mul(s, big.NewInt(shareDen))
		if d.Cmp(s) <= 0 {
			return true
		}
	}
	return false
}

// gateID is what identifies g across calls: a Keyed returns a new
// *Limiter on each call for the same key, over the same buckets.
func gateID(g throttle.Gate) any {
	if l, ok := g.(*throttle.Limiter); ok {
		if ls := l.Limits(); len(ls) > 0 {
			return l.Bucket(ls[0].Name)
		}
	}
	return g
}

// epoch returns the epoch a call on g is sent in, and raises the tuned
// capacities of g to costs where they are below: a call is never refused
// locally for a capacity the Client cut.
func (c *config) epoch(g throttle.Gate, costs []int64) (*tuning, uint64) {
	if c.tunes.n.Load() == 0 {
		return nil, 0
	}
	v, ok := c.tunes.m.Load(gateID(g))
	if !ok {
		return nil, 0
	}
	t := v.(*tuning)
	t.mu.Lock()
	defer t.mu.Unlock()
	grow := false
	for i := range min(len(costs), len(t.maxCost)) {
		if costs[i] > t.maxCost[i] {
			t.maxCost[i], grow = costs[i], true
		}
	}
	if grow {
		t.apply()
	}
	return t, t.epoch
}

// lower slows g down after a refusal with a RetryInfo of delay of a call
// sent in epoch ep (0 if g was not slowed then), once per epoch: the calls
// sent together before a slow-down are refused together, and count as one
// piece of evidence. A delay longer than the Gate's own spacing of the
// call (the time its rate now takes to refill the call's costs) says the
// Gate lets through well more than the server admits: its rate is halved.
// A shorter one says the call came a moment early, which timing alone
// does to a Gate at exactly the server's rate: it is forgiven, unless
// another was within the Gate's last forgiveCalls answers, when the rate
// goes down one step (a Gate a little above the server's rate is refused
// that often, each time a little early).
func (c *config) lower(g throttle.Gate, t *tuning, ep uint64, costs []int64, delay time.Duration) {
	if t == nil {
		t = c.tuningOf(g, costs)
		if t == nil {
			return
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if ep != t.epoch || t.share == 1 {
		return
	}
	t.answers++
	now := c.clock.Now()
	short := t.withinSpacing(costs, delay)
	if short && (t.forgiven == 0 || t.answers-t.forgiven > forgiveCalls) {
		t.forgiven = t.answers
		return
	}
	t.epoch++
	if short {
		t.share--
	} else {
		t.share = max(t.share/2, 1)
	}
	t.changed = now
	t.apply()
	c.stats.lowered.Add(1)
}

// succeeded raises g's rate a step after a success, if RecoverAfter has
// passed since its last change with no slow-down, and forgets g once it
// is back at its configured rate.
func (c *config) succeeded(t *tuning, ep uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.answers++
	now := c.clock.Now()
	if ep != t.epoch || t.share == shareDen || now.Sub(t.changed) < RecoverAfter {
		return
	}
	t.share++
	t.changed = now
	t.apply()
	if t.share < shareDen {
		c.stats.raised.Add(1)
		return
	}
	c.stats.restored.Add(1)
	c.tunes.m.Delete(gateID(t.g))
	c.tunes.n.Add(-1)
}

// tuningOf returns the state of g, made on its first slow-down; nil if g
// cannot be tuned (neither a Limiter whose limits have distinct names nor
// a throttle.Tuner) or the Client holds maxTuned Gates already.
func (c *config) tuningOf(g throttle.Gate, costs []int64) *tuning {
	id := gateID(g)
	if v, ok := c.tunes.m.Load(id); ok {
		return v.(*tuning)
	}
	limits := g.Limits()
	t := &tuning{g: g, limits: limits, share: shareDen, maxCost: make([]int64, len(limits))}
	copy(t.maxCost, costs)
	if l, ok := g.(*throttle.Limiter); ok {
		t.buckets = make([]*throttle.Bucket, len(limits))
		for i, lm := range limits {
			b := l.Bucket(lm.Name)
			for _, o := range t.buckets[:i] {
				if o == b {
					return nil // Bucket(name) cannot tell the limits apart
				}
			}
			t.buckets[i] = b
		}
	} else if _, ok := g.(throttle.Tuner); !ok {
		return nil
	}
	c.tunes.mu.Lock()
	defer c.tunes.mu.Unlock()
	if v, ok := c.tunes.m.Load(id); ok {
		return v.(*tuning)
	}
	if c.tunes.n.Load() >= maxTuned {
		return nil
	}
	c.tunes.m.Store(id, t)
	c.tunes.n.Add(1)
	return t
}

// apply sets every limit of the Gate to share/shareDen of its configured
// rate, and its capacity in the same proportion, at least 1 and never
// below the largest cost seen. A limit whose scaled rate does not fit in
// int64 (or that is Inf, or never refills) keeps its configuration.
func (t *tuning) apply() {
	tu, _ := t.g.(throttle.Tuner)
	for i, lm := range t.limits {
		tokens, period := lm.Rate.Tokens(), lm.Rate.Period()
		if tokens <= 0 || period <= 0 {
			continue
		}
		num, den := t.share, int64(shareDen)
		d := gcd(num, den)
		num, den = num/d, den/d
		if tokens > math.MaxInt64/num || int64(period) > math.MaxInt64/den || lm.Capacity > math.MaxInt64/t.share {
			continue
		}
		rate := throttle.Per(tokens*num, period*time.Duration(den))
		capacity := max(lm.Capacity*t.share/shareDen, 1, min(t.maxCost[i], lm.Capacity))
		if t.buckets == nil {
			tu.Tune(i, rate.Tokens(), rate.Period())
			continue
		}
		b := t.buckets[i]
		if t.share == shareDen {
			rate, capacity = lm.Rate, lm.Capacity
		}
		// Errors leave the bucket as it was: a rate or capacity New took,
		// scaled, is one it takes.
		_ = b.SetRate(rate)
		_ = b.SetCapacity(capacity)
	}
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
