package throttle

import (
	"time"

	"github.com/throttlekit/throttle/internal/exact"
)

// rejectedWhy is group.rejectedWhy for a compact key, whose refused
// TryAcquire reports the wait WaitTime would give, as a held key's does,
// and the limit that binds it, the first whose instant is the latest: a
// compact key has no queue and no pause.
func (e *entry[K]) rejectedWhy(costs []int64, now int64) *WaitError {
	if t := e.readyAt(costs, now); t == exact.Never || t <= now {
		return nil
	}
	p := e.prof()
	bind, latest := -1, int64(0)
	for i := range p.shapes {
		if costs[i] == 0 {
			continue
		}
		l := e.get(i)
		if at := p.shapes[i].ReadyAt(&l, costs[i]); bind < 0 || at > latest {
			bind, latest = i, at
		}
	}
	return &WaitError{Wait: time.Duration(max(latest, now) - now), Limit: p.limits[bind].Name}
}

// observeWait is observe for a compact key, with the wait of the whole
// acquisition and its explanation.
func (p *profile) observeWait(o Observer, costs []int64, k EventKind, why *WaitError) {
	var wait time.Duration
	if why != nil {
		wait = why.Wait
	}
	for i, c := range costs {
		if c != 0 {
			o.Observe(Event{Kind: k, Limit: p.limits[i].Name, Cost: c, Wait: wait, Why: why})
		}
	}
}
