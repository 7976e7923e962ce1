package redisbucket_test

import (
	"sync"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

type recorder struct {
	mu sync.Mutex
	ev []redisbucket.Event
}

func (r *recorder) Observe(e redisbucket.Event) {
	r.mu.Lock()
	r.ev = append(r.ev, e)
	r.mu.Unlock()
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.ev {
		out = append(out, kindName(e.Kind)+"/"+e.Mode.String())
	}
	return out
}

func (r *recorder) count(f func(redisbucket.Event) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.ev {
		if f(e) {
			n++
		}
	}
	return n
}

func kindName(k throttle.EventKind) string {
	switch k {
	case throttle.EventGranted:
		return "granted"
	case throttle.EventRejected:
		return "rejected"
	case throttle.EventCancelled:
		return "cancelled"
	case throttle.EventSettled:
		return "settled"
	}
	return "other"
}
