package throttle

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// keyedPick is PerKey's side of LimitHandler: it decides a request on the
// key's compact state, under one shard lock, so that a client key that is
// merely spending stays a compact record and never gets a Limiter.
type keyedPick[K comparable] struct {
	k    *Keyed[K]
	key  func(*http.Request) K
	seen markSeen // the LimitHandlers that run it
}

func (kp *keyedPick[K]) serve(h *limitHandler, w http.ResponseWriter, r *http.Request, st *reqState) {
	key := kp.key(r)
	var costs []int64 // nil: one on every limit
	if h.customCost {
		lim, view, err := kp.k.costView(key)
		if err != nil {
			h.pickFailed(w, kp.pickErr(key, err))
			return
		}
		if lim != nil {
			h.serveLimiter(w, r, st, lim)
			return
		}
		if costs, err = h.cost(r, view); err != nil {
			http.Error(w, "request cost: "+err.Error(), http.StatusBadRequest)
			return
		}
		if costsFree(costs) {
			h.next.ServeHTTP(w, r)
			return
		}
	}
	var held *Limiter // storage for the key's Limiter, if it has one
	if !h.customCost {
		// defaultCost keeps no Limiter it is shown, and nothing else
		// outlives the request: the request's own storage will do.
		held = &st.held
	}
	lim, d, err := kp.k.admit(key, costs, st.status[:0], h.ietf, held)
	switch {
	case err != nil && (errors.Is(err, ErrInvalidLimit) || errors.Is(err, ErrTooManyKeys)):
		h.pickFailed(w, kp.pickErr(key, err))
		return
	case err != nil:
		h.costFailed(w, err)
		return
	case lim != nil:
		h.serveLimiter(w, r, st, lim)
		return
	}
	hd := w.Header()
	if d.policy != nil && d.state != nil {
		hd["Ratelimit-Policy"], hd["Ratelimit"] = d.policy, d.state
	} else {
		h.writeStatus(hd, d.status)
	}
	if !d.ok {
		if d.retry == nil {
			h.refuse(w, r, d.wait)
			return
		}
		hd["Retry-After"] = d.retry
		h.rejected(w, r, d.wait)
		return
	}
	st.keep(d.costs)
	st.lazy = true
	st.w.ResponseWriter = w
	h.next.ServeHTTP(&st.w, r)
}

// pickErr is the error PerKey's LimiterFunc gives for err.
func (kp *keyedPick[K]) pickErr(key K, err error) error {
	if errors.Is(err, ErrInvalidLimit) {
		return fmt.Errorf("%w: key %v", ErrInvalidLimit, key)
	}
	return err
}

// buckets returns the buckets of the Permit of a request admitted on a
// compact key: those of the key's Limiter.
func (kp *keyedPick[K]) buckets(st *reqState) []*Bucket {
	if l := kp.k.Limiter(kp.key(st.r)); l != nil {
		return l.bs
	}
	return nil
}

// decision is what admit decided for a key held compactly.
type decision struct {
	ok     bool
	costs  []int64       // the costs decided
	status []LimitStatus // every limit after the decision
	wait   time.Duration // refused: until the costs are covered, -1 if never
	// WriteIETF's values of status and wait, from the limits' ietfCache,
	// when asked for and kept there; else nil.
	policy, state, retry []string
}

// admit is LimitHandler's TryAcquire of costs (nil: one on every limit) on
// key, with the status and, for a refusal, the wait, all read at one instant
// under the shard lock. For a key that has a Limiter, or whose overflow
// bucket has one, it returns that Limiter instead, for LimitHandler to
// decide on, in held if held is not nil. status is storage for the
// decision's status; with ietf set, the decision carries its header values
// too when the cache of the key's limits has them.
func (k *Keyed[K]) admit(key K, costs []int64, status []LimitStatus, ietf bool, held *Limiter) (*Limiter, decision, error) {
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
		if held == nil {
			held = new(Limiter)
		}
		*held = limiterOver(h.shared())
		s.sweep(now, steps)
		s.mu.Unlock()
		return held, decision{}, nil
	}
	p = e.prof()
	if costs == nil {
		costs = defaultCosts(len(p.shapes))
	}
	if err := p.check(costs); err != nil {
		s.mu.Unlock()
		return nil, decision{}, err
	}
	d := decision{ok: e.try(costs, now), costs: costs}
	for i := range p.shapes {
		sh, l := &p.shapes[i], e.get(i)
		reset := time.Duration(-1)
		if t := sh.readyAt(&l, sh.capacity); t != never {
			reset = time.Duration(t - now)
		}
		status = append(status, LimitStatus{
			Name:      p.limits[i].Name,
			Capacity:  sh.capacity,
			Rate:      p.limits[i].Rate,
			Remaining: max(l.tokens, 0),
			Reset:     reset,
		})
	}
	d.status = status
	if !d.ok {
		d.wait = -1
		if t := e.readyAt(costs, now); t != never {
			d.wait = time.Duration(t - now)
		}
	}
	if ietf {
		if c := k.ietfCache(p); c != nil {
			d.policy = c.policy
			if len(status) == 1 {
				d.state = c.stateOf(status[0].Remaining, status[0].Reset)
			}
			if !d.ok {
				d.retry = c.retryOf(d.wait)
			}
		}
	}
	s.sweep(now, steps)
	s.mu.Unlock()
	if k.obs != nil {
		kind := EventRejected
		if d.ok {
			kind = EventGranted
		}
		p.observe(k.obs, costs, kind)
	}
	return nil, d, nil
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
			l := limiterOver(h.shared())
			return &l, nil, nil
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
			l := limiterOver(h.shared())
			return &l, nil, nil
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
