package httpthrottle

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/throttlekit/throttle"
)

// RequestPermit returns the Permit LimitHandler took for the request that w
// answers, so that the handler can settle it against the request's actual
// cost (the tokens an LLM call really used, say), or nil outside the
// middleware or for a request that took nothing. w is the ResponseWriter
// the handler was given, or one that wraps it and has an Unwrap method
// returning it, as http.ResponseController expects.
//
// LimitHandler makes the Permit on the first call, so a handler that never
// calls RequestPermit costs no Permit; later calls for the same request
// return the same one, which stays the handler's to settle after it
// returns. The writer is LimitHandler's only until the handler returns, as
// net/http's own is.
//
// Under PerKey, a request admitted on a key held in compact form gets its
// Permit here, on the first call: the key then gets a full Limiter (several
// hundred bytes) until it is dropped, so call RequestPermit only to
// settle, and early in the handler: a key left unused for its refill time
// meanwhile may have been dropped, and the Permit is then the key's anew
// (or, if the Keyed is at its key cap, that of the key's overflow bucket).
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

// reqState is LimitHandler's record of one request, reused from request to
// request (a sync.Pool of the handler's): PerKey finds it in the handler's
// marks, or in the request's context, while pick runs, and takes the
// request (keyed); RequestPermit finds it through w.
type reqState struct {
	h       *limitHandler
	w       limitWriter                  // what next is given for an admitted request
	r       *http.Request                // the request LimitHandler passes on
	picking bool                         // pick is running: a PerKey may take the request
	marked  atomic.Pointer[http.Request] // r while st is in the handler's marks
	keyed   keyedRequest                 // the PerKey that took it
	lazy    bool                         // admitted on a compact key: the buckets are found on demand
	bs      []*throttle.Bucket           // the buckets the costs were taken from, once known
	costs   []int64                      // what the request took
	small   [2]int64                     // costs' storage for up to two limits
	status  [2]throttle.LimitStatus
	held    throttle.Limiter // the Limiter of a PerKey key that has one, under defaultCost

	mu    sync.Mutex      // guards p: a handler may ask from several goroutines
	p     throttle.Permit // made on the first RequestPermit, or taken from a Gate
	asked bool            // RequestPermit was called: p is decided
}

// keyedRequest is a PerKey's side of LimitHandler (keyed_http.go).
type keyedRequest interface {
	serve(h *limitHandler, w http.ResponseWriter, r *http.Request, st *reqState)
	buckets(st *reqState) []*throttle.Bucket
}

// admit records costs, taken from bs, as the request's.
func (st *reqState) admit(bs []*throttle.Bucket, costs []int64) {
	st.bs = bs
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
	if st.lazy {
		st.bs = st.keyed.buckets(st)
	}
	if st.bs != nil && st.costs != nil {
		st.p = core.NewPermit(st.bs, st.costs, nil)
	}
	return st.p
}

// reset readies st for another request once LimitHandler is done with it.
// The Permit, if one was made, stays the handler's.
func (st *reqState) reset() {
	// Field by field: marked may be read meanwhile by a PerKey looking
	// for its own request (see pickMarks.find), and is already nil.
	st.r, st.picking, st.keyed, st.lazy = nil, false, nil, false
	st.bs, st.costs, st.small = nil, nil, [2]int64{}
	st.status = [2]throttle.LimitStatus{}
	if core.Buckets(&st.held) != nil {
		st.held = throttle.Limiter{}
	}
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
