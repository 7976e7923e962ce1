package throttle

import (
	"time"

	"github.com/throttlekit/throttle/internal/exact"
)

// decision is what admit decided for a key held compactly.
type decision struct {
	OK     bool
	Costs  []int64       // the costs decided
	Status []LimitStatus // every limit after the decision
	Wait   time.Duration // refused: until the costs are covered, -1 if never
}

// admit is the Admit of key's Gate: TryAcquire of costs (nil: one on every
// limit) on key, with the status and, for a refusal, the wait, all read at
// one instant under the shard lock. For a key that has a Limiter, or whose
// overflow bucket has one, it returns that Limiter instead, to decide on.
// The status is appended to status.
func (k *Keyed[K]) admit(key K, costs []int64, status []LimitStatus) (*Limiter, decision, error) {
	s, tag := k.shard(key)
	s.mu.Lock()
	e, p, now, err := s.lookup(k, key, tag, true)
	if err != nil {
		s.mu.Unlock()
		return nil, decision{}, err
	}
	steps := s.due()
	if e == nil {
		// A call that can only fail must not make the key.
		if costs == nil {
			costs = defaultCosts(len(p.shapes))
		}
		if err := p.check(costs); err != nil {
			s.forget(p)
			s.mu.Unlock()
			return nil, decision{}, err
		}
		if k.reserve(s, now) {
			e, steps = s.insert(key, tag, p, now), stepsInsert
		} else {
			e, err = s.overflow(k, p, tag, now)
			s.forget(p)
			if err != nil {
				s.sweep(now, steps)
				s.mu.Unlock()
				return nil, decision{}, err
			}
		}
	}
	if h := e.held(); h != nil {
		l := h.limiter()
		s.sweep(now, steps)
		s.mu.Unlock()
		return l, decision{}, nil
	}
	p = e.prof()
	d, err := k.decide(e, p, costs, status, now)
	if err != nil {
		s.mu.Unlock()
		return nil, decision{}, err
	}
	s.sweep(now, steps)
	s.mu.Unlock()
	if k.obs != nil {
		kind := EventRejected
		if d.OK {
			kind = EventGranted
		}
		p.observe(k.obs, d.Costs, kind)
	}
	return nil, d, nil
}

// decide is admit's decision on e, a key held compactly, at now, under the
// shard lock: the spend, the status of every limit and the wait of a
// refusal.
func (k *Keyed[K]) decide(e *entry[K], p *profile, costs []int64, status []LimitStatus, now int64) (decision, error) {
	if costs == nil {
		costs = defaultCosts(len(p.shapes))
	}
	if err := p.check(costs); err != nil {
		return decision{}, err
	}
	d := decision{OK: e.try(costs, now), Costs: costs}
	status = e.status(p, now, status)
	d.Status = status
	if !d.OK {
		d.Wait = -1
		if t := e.readyAt(costs, now); t != exact.Never {
			d.Wait = time.Duration(t - now)
		}
	}
	return d, nil
}

// defaultCosts is defaultCost for n limits.
func defaultCosts(n int) []int64 {
	if n <= len(oneEach) {
		return oneEach[:n] // only read, as in defaultCost
	}
	costs := make([]int64, n)
	for i := range costs {
		costs[i] = 1
	}
	return costs
}

var oneEach = [...]int64{1, 1, 1, 1, 1, 1, 1, 1}
