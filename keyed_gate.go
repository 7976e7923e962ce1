package throttle

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle/internal/exact"
)

// Gate returns key's Gate, for code that takes any Gate (the HTTP
// Transport, the gRPC interceptors, a pool): unlike Limiter, it holds
// nothing and makes no Limiter for the key while the key is merely
// spending, so that a server admitting the keys its clients send keeps
// each one a compact record. TryAcquire, WaitTime, Limits and Status
// decide and read on the compact record; Take and Settle too, until the
// key has a Limiter. The Gate is also a Taker, a Meter, a Pauser, a
// Leveler and an Observer: PauseUntil, Lower and Observe act on the key's
// Limiter, which they make (a paused key is held until its pause ends),
// as do Acquire and TryAcquirePermit, since a Permit is the key's.
//
// A Gate is a small value: making one allocates nothing beyond its
// conversion to the interface, and two Gates of one key are equal (==),
// so code that keeps state per Gate finds the key's again. The slice
// Limits returns is shared by the keys of those limits: do not modify it.
// For a key whose config is invalid, every method fails as the Keyed's
// do, and those that return no error do nothing.
func (k *Keyed[K]) Gate(key K) Gate { return keyGate[K]{k, key} }

// keyGate is a Keyed's Gate of one key.
type keyGate[K comparable] struct {
	k   *Keyed[K]
	key K
}

func (g keyGate[K]) Acquire(ctx context.Context, costs ...int64) (Permit, error) {
	return g.k.Acquire(ctx, g.key, costs...)
}

func (g keyGate[K]) TryAcquirePermit(costs ...int64) (Permit, bool, error) {
	l, err := g.k.limiter(g.key)
	if err != nil {
		return nil, false, err
	}
	return l.TryAcquirePermit(costs...)
}

func (g keyGate[K]) WaitTime(costs ...int64) (time.Duration, error) {
	return g.k.WaitTime(g.key, costs...)
}

func (g keyGate[K]) TryAcquire(costs ...int64) (bool, error) {
	return g.k.TryAcquire(g.key, costs...)
}

// Take takes the costs on the compact record when they are covered now,
// and otherwise waits on the key's Limiter, as a caller of Acquire does.
func (g keyGate[K]) Take(ctx context.Context, costs ...int64) (time.Duration, error) {
	if ok, _, err := g.k.try(g.key, costs, true); ok || err != nil {
		return 0, err
	}
	l, err := g.k.limiter(g.key)
	if err != nil {
		return 0, err
	}
	return l.Take(ctx, costs...)
}

func (g keyGate[K]) Settle(taken, actual []int64) error { return g.k.settle(g.key, taken, actual) }

func (g keyGate[K]) Limits() []Limit {
	if _, p := g.k.peek(g.key); p != nil {
		return p.handed
	}
	return nil
}

func (g keyGate[K]) Status(dst []LimitStatus) []LimitStatus { return g.k.status(g.key, dst) }

func (g keyGate[K]) PauseUntil(t time.Time, levels ...int64) {
	if l, err := g.k.limiter(g.key); err == nil {
		l.PauseUntil(t, levels...)
	}
}

func (g keyGate[K]) Lower(i int, remaining int64) {
	if l, err := g.k.limiter(g.key); err == nil {
		l.Lower(i, remaining)
	}
}

// Observe tells the key's Limiter of a pause's cause (EventPaused with a
// Reason), making it, as the pause that follows will; any other event goes
// to the Keyed's observer without making the key a Limiter.
func (g keyGate[K]) Observe(e Event) {
	if e.Kind == EventPaused && e.Reason != "" {
		if l, err := g.k.limiter(g.key); err == nil {
			l.Observe(e)
		}
		return
	}
	l, p := g.k.peek(g.key)
	switch {
	case l != nil:
		l.Observe(e)
	case p != nil && g.k.obs != nil:
		for _, lim := range p.limits {
			if lim.Name == e.Limit {
				g.k.obs.Observe(e)
				return
			}
		}
	}
}

// Clock returns the clock the Keyed's keys sleep on.
func (g keyGate[K]) Clock() clockwork.Clock {
	if g.k.clock == nil {
		return clockwork.NewRealClock()
	}
	return g.k.clock
}

// peek returns key's limits (nil for an invalid config) and its Limiter
// if it has one, without making the key.
func (k *Keyed[K]) peek(key K) (*Limiter, *profile) {
	s, tag := k.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, p, _, err := s.lookup(k, key, tag, false)
	switch {
	case err != nil:
		return nil, nil
	case e == nil:
		return nil, p
	case e.held() != nil:
		return e.held().limiter(), e.prof()
	}
	return nil, e.prof()
}

// status is Limiter.Status of key's limiter, read on its compact record
// when it has no Limiter; a key not held is full. It makes no key.
func (k *Keyed[K]) status(key K, dst []LimitStatus) []LimitStatus {
	s, tag := k.shard(key)
	s.mu.Lock()
	e, p, now, err := s.lookup(k, key, tag, false)
	switch {
	case err != nil:
		s.mu.Unlock()
		return dst
	case e == nil && k.hasRoom(s, now):
		s.mu.Unlock()
		return p.fullStatus(dst)
	case e == nil:
		// The key would overflow the cap: its calls go to the overflow
		// bucket, so that is its status.
		if e, err = s.overflow(k, p, tag, now); err != nil {
			s.mu.Unlock()
			return dst
		}
	}
	if h := e.held(); h != nil {
		h.inflight.Add(1)
		s.mu.Unlock()
		defer h.inflight.Add(-1)
		return h.lim.Status(dst)
	}
	dst = e.status(e.prof(), now, dst)
	s.mu.Unlock()
	return dst
}

// status appends the status of every limit of a compact key at now,
// reading its levels as they would be at now without moving them.
func (e *entry[K]) status(p *profile, now int64, dst []LimitStatus) []LimitStatus {
	for i := range p.shapes {
		sh, l := &p.shapes[i], e.get(i)
		sh.Advance(&l, now)
		reset := time.Duration(-1)
		if t := sh.ReadyAt(&l, sh.Cap); t != exact.Never {
			reset = time.Duration(t - now)
		}
		dst = append(dst, LimitStatus{
			Name:      p.limits[i].Name,
			Capacity:  sh.Cap,
			Rate:      p.limits[i].Rate,
			Remaining: max(l.Tokens, 0),
			Reset:     reset,
			Level:     sh.Value(&l),
		})
	}
	return dst
}

// fullStatus is the status of a fresh key of p: every limit full.
func (p *profile) fullStatus(dst []LimitStatus) []LimitStatus {
	for i, sh := range p.shapes {
		dst = append(dst, LimitStatus{Name: p.limits[i].Name, Capacity: sh.Cap, Rate: p.limits[i].Rate, Remaining: sh.Cap, Level: float64(sh.Cap)})
	}
	return dst
}

// Admit decides on the compact record under one lock, or on the key's
// Limiter once it has one.
func (g keyGate[K]) Admit(dst []LimitStatus, costs []int64) (bool, time.Duration, []LimitStatus, error) {
	return g.k.Admit(g.key, dst, costs)
}

// Admit is the Admit of key's Gate (see Admitter), for a caller that
// holds the key rather than its Gate: a server's middleware deciding a
// request and writing its rate-limit fields in one step, with no Gate
// made for a key that is merely spending.
func (k *Keyed[K]) Admit(key K, dst []LimitStatus, costs []int64) (bool, time.Duration, []LimitStatus, error) {
	l, d, err := k.admit(key, costs, dst)
	switch {
	case err != nil:
		return false, 0, dst, err
	case l == nil:
		return d.OK, d.Wait, d.Status, nil
	}
	if costs == nil {
		costs = defaultCosts(len(l.bs))
	}
	ok, err := l.TryAcquire(costs...)
	if err != nil {
		return false, 0, dst, err
	}
	dst = l.Status(dst)
	if ok {
		return true, 0, dst, nil
	}
	wait, err := l.WaitTime(costs...)
	if err != nil {
		wait = -1
	}
	return false, wait, dst, nil
}
