package throttle

import (
	"time"

	"github.com/throttlekit/throttle/internal/corelink"
	"github.com/throttlekit/throttle/internal/exact"
)

// decision is what admit decided for a key held compactly.
type decision = corelink.Decision[LimitStatus]

// admit is LimitHandler's TryAcquire of costs (nil: one on every limit) on
// key, with the status and, for a refusal, the wait, all read at one instant
// under the shard lock. For a key that has a Limiter, or whose overflow
// bucket has one, it returns that Limiter instead, for LimitHandler to
// decide on (the one Keyed.Limiter hands out). status is storage for the
// decision's status; with ietf set, the decision carries its header values
// too when the cache of the key's limits has them.
func (k *Keyed[K]) admit(key K, costs []int64, status []LimitStatus, ietf bool) (*Limiter, decision, error) {
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
	d, err := k.decide(e, p, costs, status, now, ietf)
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
// shard lock: the spend, the status of every limit, the wait of a refusal
// and, with ietf set, the header values the cache of p has.
func (k *Keyed[K]) decide(e *entry[K], p *profile, costs []int64, status []LimitStatus, now int64, ietf bool) (decision, error) {
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
	if ietf {
		if c := k.ietfCache(p); c != nil {
			d.Policy = c.policy
			if len(status) == 1 {
				d.State = c.stateOf(status[0].Remaining, status[0].Reset)
			}
			if !d.OK {
				d.Retry = c.retryOf(d.Wait)
			}
		}
	}
	return d, nil
}

// costView returns what LimitHandler's cost function is shown for key: the
// key's Limiter if it has one, or that of the key's overflow bucket if the
// key would overflow and the bucket has one (lim), or else the stand-in of
// its limits (view).
func (k *Keyed[K]) costView(key K) (lim, view *Limiter, err error) {
	s, tag := k.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, p, now, err := s.lookup(k, key, tag, true)
	if err != nil {
		return nil, nil, err
	}
	if e != nil {
		if h := e.held(); h != nil {
			return h.limiter(), nil, nil
		}
		view, err = k.view(e.prof())
		return nil, view, err
	}
	defer s.forget(p) // runs before the unlock
	if !k.hasRoom(s, now) {
		o, err := s.overflow(k, p, tag, now)
		if err != nil {
			return nil, nil, err
		}
		if h := o.held(); h != nil {
			return h.limiter(), nil, nil
		}
	}
	view, err = k.view(p)
	return nil, view, err
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

// keyedAdmit lends LimitHandler a Keyed's admit and costView (through
// corelink), under its key type.
type keyedAdmit[K comparable] struct{ k *Keyed[K] }

func (a keyedAdmit[K]) Admit(key K, costs []int64, status []LimitStatus, ietf bool) (*Limiter, decision, error) {
	return a.k.admit(key, costs, status, ietf)
}

func (a keyedAdmit[K]) CostView(key K) (lim, view *Limiter, err error) { return a.k.costView(key) }

func (k *Keyed[K]) admitter() any { return keyedAdmit[K]{k} }
