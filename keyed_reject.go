package throttle

import (
	"time"

	"github.com/throttlekit/throttle/internal/exact"
)

// rejectedWait is group.rejectedWait for a compact key, whose refused
// TryAcquire reports the wait WaitTime would give, as a held key's does.
func (e *entry[K]) rejectedWait(costs []int64, now int64) time.Duration {
	if t := e.readyAt(costs, now); t != exact.Never {
		return time.Duration(t - now)
	}
	return 0
}

// observeWait is observe for a compact key, with the wait of the whole
// acquisition.
func (p *profile) observeWait(o Observer, costs []int64, k EventKind, wait time.Duration) {
	for i, c := range costs {
		if c != 0 {
			o.Observe(Event{Kind: k, Limit: p.limits[i].Name, Cost: c, Wait: wait})
		}
	}
}
