package pool

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/throttlekit/throttle"
)

// choice is a member that may serve a call, and how soon.
type choice struct {
	m     *member
	wait  time.Duration
	room  float64 // headroom times weight
	share float64 // calls served per unit of weight, for ties
}

// rank returns the members out of quarantine at now that can ever serve
// costs, best first (see the package doc), and how many of them, at the
// head, cover the call now. err is a member's error when none can serve.
func (p *Pool) rank(now time.Time, costs []int64, buf []choice) (cs []choice, ready int, err error) {
	cs = buf[:0]
	p.mu.Lock()
	for _, m := range p.members {
		if m.until.After(now) {
			continue
		}
		cs = append(cs, choice{m: m, share: float64(m.served.Load()) / m.weight})
	}
	p.mu.Unlock()
	for i := 0; i < len(cs); {
		w, e := cs[i].m.Gate.WaitTime(costs...)
		if e != nil {
			err = e
			cs = slices.Delete(cs, i, i+1)
			continue
		}
		cs[i].wait = w
		if w == 0 {
			// Weight w makes a member's use count 1/w: members drain
			// in proportion to their weights.
			cs[i].room = 1 - (1-headroom(cs[i].m, costs))/cs[i].m.weight
		}
		i++
	}
	if len(cs) > 0 {
		err = nil
	}
	slices.SortFunc(cs, better)
	for ready < len(cs) && cs[ready].wait == 0 && cs[ready].m.Tier == cs[0].m.Tier {
		ready++
	}
	return cs, ready, err
}

// better orders choices: no wait before a wait; among no waits, lower
// tier, then more headroom; among waits, shorter, then lower tier; then
// fewer calls served per unit of weight, then the order of New.
func better(a, b choice) int {
	switch {
	case (a.wait == 0) != (b.wait == 0):
		return cmpBool(a.wait == 0, b.wait == 0)
	case a.wait != b.wait:
		return cmpDur(a.wait, b.wait)
	case a.m.Tier != b.m.Tier:
		return a.m.Tier - b.m.Tier
	case a.room != b.room:
		if a.room > b.room {
			return -1
		}
		return 1
	}
	if a.share != b.share {
		if a.share < b.share {
			return -1
		}
		return 1
	}
	return a.m.index - b.m.index
}

func cmpBool(a, b bool) int {
	if a && !b {
		return -1
	}
	return 1
}

func cmpDur(a, b time.Duration) int {
	if a < b {
		return -1
	}
	return 1
}

// headroom is the smallest fraction left of the limits the call costs on
// m, by its Meter; 1 for a member that is no Meter.
func headroom(m *member, costs []int64) float64 {
	if m.meter == nil {
		return 1
	}
	var buf [4]throttle.LimitStatus
	room := 1.0
	for i, st := range m.meter.Status(buf[:0]) {
		if i >= len(costs) || costs[i] == 0 || st.Capacity <= 0 {
			continue
		}
		room = min(room, float64(st.Remaining)/float64(st.Capacity))
	}
	return room
}

// TryAcquirePermit takes the costs from the best member that covers them
// now (see the package doc) and returns its Permit, a *Permit; ok is
// false, and nothing is taken, when no member out of quarantine covers
// them now.
func (p *Pool) TryAcquirePermit(costs ...int64) (throttle.Permit, bool, error) {
	var buf [8]choice
	cs, ready, err := p.rank(p.clock.Now(), costs, buf[:0])
	if err != nil {
		return nil, false, err
	}
	return p.tryReady(cs[:ready], costs)
}

// tryReady tries the members of cs in order and returns the first Permit
// one gives.
func (p *Pool) tryReady(cs []choice, costs []int64) (throttle.Permit, bool, error) {
	var err error
	for _, c := range cs {
		pm, ok, e := c.m.Gate.TryAcquirePermit(costs...)
		if ok {
			return p.served(pm, c.m), true, nil
		}
		if e != nil {
			err = e
		}
	}
	return nil, false, err
}

// Acquire takes the costs from the best member (see the package doc),
// waiting its turn there if none covers them now, and returns its Permit,
// a *Permit. When every member is quarantined it waits for the first to
// come back, unless that is past the context's deadline: then, as when the
// member it waits on cannot serve before the deadline, it fails at once
// with an *UnavailableError, which matches context.DeadlineExceeded.
func (p *Pool) Acquire(ctx context.Context, costs ...int64) (throttle.Permit, error) {
	var buf [8]choice
	for {
		now := p.clock.Now()
		cs, ready, err := p.rank(now, costs, buf[:0])
		if err != nil {
			return nil, err
		}
		if len(cs) == 0 {
			if err := p.awaitQuarantine(ctx, now); err != nil {
				return nil, err
			}
			continue
		}
		if pm, ok, _ := p.tryReady(cs[:ready], costs); ok {
			return pm, nil
		}
		m := cs[0].m
		pm, err := m.Gate.Acquire(ctx, costs...)
		if err != nil {
			var wait *throttle.WaitError
			if errors.As(err, &wait) {
				return nil, p.unavailable(now, cs, err)
			}
			return nil, err
		}
		return p.served(pm, m), nil
	}
}

// WaitTime reports how long until the best member would cover the costs:
// the shortest of the members' waits, or until the first quarantine ends
// when every member is quarantined.
func (p *Pool) WaitTime(costs ...int64) (time.Duration, error) {
	var buf [8]choice
	now := p.clock.Now()
	cs, _, err := p.rank(now, costs, buf[:0])
	if err != nil {
		return 0, err
	}
	if len(cs) == 0 {
		return p.firstBack(now).Sub(now), nil
	}
	return cs[0].wait, nil
}

// served counts a call m serves, and returns its Permit.
func (p *Pool) served(pm throttle.Permit, m *member) *Permit {
	m.served.Add(1)
	return &Permit{Permit: pm, m: m, pool: p}
}
