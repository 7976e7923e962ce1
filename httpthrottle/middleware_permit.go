package httpthrottle

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/errs"
)

// RequestPermit returns the Permit Handler took for the request that w
// answers, so that the handler can settle it against the request's actual
// cost (the tokens an LLM call really used, say), or nil outside the
// middleware or for a request that took nothing. w is the ResponseWriter
// the handler was given, or one that unwraps to it (an Unwrap method, as
// http.ResponseController expects).
//
// The Permit is made on the first call, so a handler that never asks costs
// none; it stays the handler's to settle after it returns. Under PerKey it
// settles through the key's Gate (Keyed.Gate): settle early, since a key
// left unused for its refill time may have been dropped meanwhile, and
// the settlement then finds it fresh.
func RequestPermit(w http.ResponseWriter) throttle.Permit {
	for w != nil {
		if lw, ok := w.(*limitWriter); ok {
			return lw.st.permit()
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
	return nil
}

// reqState is Handler's record of one request, reused from request to
// request (a sync.Pool of the handler's): RequestPermit finds it through w.
type reqState struct {
	h      *handler
	w      limitWriter    // what next is given for an admitted request
	r      *http.Request  // the request Handler passes on
	gate   gate           // the gate of a Gate that is a value (a key's), made for this request
	tk     throttle.Taker // what the costs were taken from, once known
	slot   keySlot        // the key admitted under PerKey, if any; kept between requests
	costs  []int64        // what the request took
	small  [2]int64       // costs' storage for up to two limits
	status [2]throttle.LimitStatus

	mu    sync.Mutex      // guards p: a handler may ask from several goroutines
	p     throttle.Permit // made on the first RequestPermit, or taken from a Gate
	asked bool            // RequestPermit was called: p is decided
}

// took records costs, taken from tk, as the request's.
func (st *reqState) took(tk throttle.Taker, costs []int64) {
	st.tk = tk
	st.keep(costs)
}

// keep records a copy of costs.
func (st *reqState) keep(costs []int64) {
	if len(costs) <= len(st.small) {
		st.costs = st.small[:len(costs)]
	} else {
		st.costs = make([]int64, len(costs))
	}
	copy(st.costs, costs)
}

// permit returns the request's Permit, made on the first call.
func (st *reqState) permit() throttle.Permit {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.asked {
		return st.p
	}
	st.asked = true
	if st.tk == nil && st.costs != nil && st.slot != nil {
		st.tk, _ = st.slot.gate().(throttle.Taker)
	}
	if st.tk != nil && st.costs != nil {
		st.p = &takenPermit{tk: st.tk, costs: slices.Clone(st.costs)}
	}
	return st.p
}

// takenPermit is the Permit of costs a Taker took without one: made when
// a handler asks for it, it settles through the Taker's Settle.
type takenPermit struct {
	tk    throttle.Taker
	costs []int64
	done  atomic.Bool
}

func (p *takenPermit) Costs() []int64 { return slices.Clone(p.costs) }

func (p *takenPermit) Settle(actual ...int64) error {
	if len(actual) != len(p.costs) {
		return errs.CostCount(len(actual), len(p.costs), "bucket")
	}
	for _, a := range actual {
		if a < 0 {
			return fmt.Errorf("%w: negative value settled: %d", throttle.ErrInvalidCost, a)
		}
	}
	if !p.done.CompareAndSwap(false, true) {
		return throttle.ErrSettled
	}
	return p.tk.Settle(p.costs, actual)
}

func (p *takenPermit) Cancel() error {
	if !p.done.CompareAndSwap(false, true) {
		return throttle.ErrSettled
	}
	return p.tk.Settle(p.costs, make([]int64, len(p.costs)))
}

// reset readies st for another request once Handler is done with it.
// The Permit, if one was made, stays the handler's.
func (st *reqState) reset() {
	st.r, st.gate = nil, gate{}
	st.tk, st.costs, st.small = nil, nil, [2]int64{}
	st.status = [2]throttle.LimitStatus{}
	st.p, st.asked = nil, false
	st.w.ResponseWriter = nil
}

// limitWriter is the ResponseWriter an admitted request's handler gets: the
// server's, with the request's state for RequestPermit. It flushes,
// hijacks and copies from a reader as the server's writer does, and
// unwraps to it for http.ResponseController.
type limitWriter struct {
	http.ResponseWriter
	st *reqState
}

// Unwrap returns the server's ResponseWriter.
func (w *limitWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush flushes the server's writer, if it can.
func (w *limitWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Hijack hijacks the server's writer's connection, or fails with an error
// matching http.ErrNotSupported if it cannot.
func (w *limitWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// ReadFrom copies src to the server's writer, with its ReadFrom if it has
// one (net/http's sends a file without copying it).
func (w *limitWriter) ReadFrom(src io.Reader) (int64, error) {
	return io.Copy(w.ResponseWriter, src)
}
