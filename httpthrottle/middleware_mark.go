package httpthrottle

import (
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"unsafe"
)

// How a PerKey learns that LimitHandler is running it, without a copy of
// the request. While pick runs, the handler keeps the request's state in a
// small table of its own (its marks), at a slot chosen by the request's
// address; a PerKey that the handler's requests have reached before knows
// the handler, and looks r up there: a few atomic loads per request,
// nothing allocated. The requests until a PerKey has found the handler (at
// most markFirst of them), and one in markLearn after, go instead with the
// state in the request's context, as every request once did: through them
// a PerKey meets the handlers that run it (up to maxMarkHandlers), so a
// PerKey that only some requests reach (a pick that chooses among several)
// is found too, and a handler whose pick reaches none (Shared) stops paying
// for the copy. A request that the PerKey does not
// find, which it then serves from the key's Limiter, is decided exactly as
// on the compact record: only memory and speed differ.
const (
	markSlots       = 64   // a power of two
	markProbe       = 4    // slots a mark may take, from its home
	markLearn       = 1024 // one request in this many goes through the context
	maxMarkHandlers = 8    // handlers a PerKey looks in
	markFirst       = 64   // requests that go through the context while no PerKey has found the handler
)

// pickMarks are a handler's requests that pick is running for.
type pickMarks struct {
	known atomic.Bool  // a PerKey has found this handler
	tried atomic.Int32 // requests sent through the context before known, up to markFirst
	slots [markSlots]atomic.Pointer[reqState]
}

// markHome is the first slot of the mark of the request at r.
func markHome(r *http.Request) uint32 {
	return uint32((uint64(uintptr(unsafe.Pointer(r))) * 0x9e3779b97f4a7c15) >> (64 - 6))
}

// mark puts st in a free slot near its request's home and returns the slot,
// or -1 if st is to go through the request's context instead.
func (m *pickMarks) mark(st *reqState) int {
	if !m.known.Load() && m.tried.Load() < markFirst {
		m.tried.Add(1)
		return -1
	}
	if rand.Uint32()%markLearn == 0 {
		return -1
	}
	st.marked.Store(st.r)
	home := markHome(st.r)
	for i := range uint32(markProbe) {
		j := (home + i) & (markSlots - 1)
		if m.slots[j].CompareAndSwap(nil, st) {
			return int(j)
		}
	}
	st.marked.Store(nil)
	return -1
}

// unmark frees the slot mark returned for st.
func (m *pickMarks) unmark(st *reqState, slot int) {
	if slot >= 0 {
		m.slots[slot].Store(nil)
		st.marked.Store(nil)
	}
}

// find returns the state of r if it is marked in m. A state in a slot may
// be another request's, on another goroutine, so only its atomic marked is
// read until it is known to be r's: one request's state is r's only on the
// goroutine that serves r, which is the caller's.
func (m *pickMarks) find(r *http.Request) *reqState {
	home := markHome(r)
	for i := range uint32(markProbe) {
		if st := m.slots[(home+i)&(markSlots-1)].Load(); st != nil && st.marked.Load() == r {
			return st
		}
	}
	return nil
}

// markSeen is a PerKey's list of the handlers that run it.
type markSeen struct {
	mu       sync.Mutex
	handlers atomic.Pointer[[]*limitHandler] // copied on write
}

// taking returns the state of r if a LimitHandler is running pick for it:
// marked in one of the handlers seen, or carried in its context, in which
// case the handler is added to those seen.
func (s *markSeen) taking(r *http.Request) *reqState {
	if hs := s.handlers.Load(); hs != nil {
		for _, h := range *hs {
			if st := h.marks.find(r); st != nil && st.picking {
				return st
			}
		}
	}
	st, ok := r.Context().Value(permitKey{}).(*reqState)
	if !ok || !st.picking {
		return nil
	}
	s.meet(st.h)
	return st
}

// meet adds h to the handlers seen, if there is room.
func (s *markSeen) meet(h *limitHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var hs []*limitHandler
	if p := s.handlers.Load(); p != nil {
		hs = *p
	}
	for _, o := range hs {
		if o == h {
			h.marks.known.Store(true)
			return
		}
	}
	if len(hs) >= maxMarkHandlers {
		return
	}
	hs = append(hs[:len(hs):len(hs)], h)
	s.handlers.Store(&hs)
	h.marks.known.Store(true)
}

// permitKey is the context key of a request's state.
type permitKey struct{}
