package throttle

import (
	"slices"
	"unsafe"
	"weak"
)

type weakBuckets = weak.Pointer[*Bucket]

// materialise gives key e a real Limiter, made from its compact levels, if
// it has none yet. From then on the Limiter's buckets are the key's state.
// The buckets share the Keyed's epoch, so levels carry over unchanged.
func (k *Keyed[K]) materialise(e *entry[K]) *held {
	if h := e.held(); h != nil {
		return h
	}
	p := e.prof()
	bs := make([]*Bucket, len(p.limits))
	for i, l := range p.limits {
		b := bucketOf(l.Capacity, l.Rate, p.shapes[i], options{Clock: k.clock, Name: l.Name, Observer: k.obs})
		b.g.Load().Epoch = k.epoch // nobody else has seen the bucket yet
		b.lvl = e.get(i)
		bs[i] = b
	}
	lim, err := NewLimiter(bs...)
	if err != nil {
		panic("throttle: joining a key's fresh buckets failed: " + err.Error())
	}
	if e.plain() {
		e.x = &extra{p: p}
	}
	e.x.more, e.x.first = nil, level{}
	e.x.h = &held{lim: lim}
	return e.x.h
}

// shared returns the bucket array that the Limiters handed out for the key
// use, distinct from h.lim's, which h.arr watches: Limiter.Acquire puts
// that array in its waiter and in its Permit, so the array stays reachable
// while any Limiter, waiter or Permit of the key does. Once it has been
// collected, a new one is made (a weak.Make, about a microsecond, at most
// once per key per garbage collection). Called with the shard locked.
func (h *held) shared() []*Bucket {
	if p := h.arr.Value(); p != nil {
		return unsafe.Slice(p, len(h.lim.bs))
	}
	bs := slices.Clone(h.lim.bs)
	h.arr = weak.Make(&bs[0])
	return bs
}

// limiter returns the Limiter handed out for the key: the one handed out
// last, while anyone holds it, else a new one over the shared array.
// Called with the shard locked.
func (h *held) limiter() *Limiter {
	if l := h.view.Value(); l != nil {
		return l
	}
	l := limiterOver(h.shared())
	h.view = weak.Make(&l)
	return &l
}

// idle reports whether the key's Limiter is exactly as a fresh one from its
// config would be: nobody can reach its buckets but h, nobody is queued, no
// pause is in force and every bucket is full; and, unless all is set, that
// it was last used at least horizon ago. Called with the shard locked,
// which keeps inflight from rising and the shared array from being handed
// out again; once the array has been collected it cannot come back.
func (h *held) idle(all bool, horizon int64) bool {
	if h.inflight.Load() != 0 || h.arr.Value() != nil {
		return false
	}
	g := h.lim.bs[0].lock()
	defer g.Mu.Unlock()
	if g.Head != nil {
		return false
	}
	now := g.Now()
	if !all && now-h.lim.bs[0].lvl.Last < horizon {
		return false
	}
	for _, b := range h.lim.bs {
		if b.paused > now || b.ReadyAt(&b.lvl, b.Cap) > now {
			return false
		}
	}
	return true
}
