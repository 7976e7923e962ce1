package main

import (
	"sync"

	"github.com/throttlekit/throttle"
)

// demoWaits counts, for the demo's table, the throttled client's calls that
// waited for their turn and those whose wait the limiter explained
// (Event.Why) by naming the limit that bound it, as every wait should be.
type demoWaits struct {
	limit             string // the name an explanation must give
	mu                sync.Mutex
	waited, explained int64
}

func (d *demoWaits) Observe(e throttle.Event) {
	if e.Kind != throttle.EventGranted || e.Wait <= 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waited++
	if e.Why != nil && e.Why.Limit == d.limit {
		d.explained++
	}
}

func (d *demoWaits) counts() (waited, explained int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waited, d.explained
}
