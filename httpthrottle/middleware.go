package httpthrottle

import (
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/errs"

	"github.com/throttlekit/throttle/internal/fields"
	"github.com/throttlekit/throttle/internal/headers"
)

// Handler returns a handler that enforces a quota in front of next, for Go
// servers that limit their own clients.
//
// For each request it takes the request's cost (WithCost; 1 on every
// limit by default) from the Gate that pick chooses, without waiting: a
// request the Gate covers now goes to next, with a Permit that the handler
// may settle (see RequestPermit); any other is answered 429 Too Many
// Requests with a Retry-After of the exact wait for its cost
// (Gate.WaitTime), rounded up to whole seconds so that a client that
// honours it is admitted. A cost larger than a limit's capacity is
// answered 413 Content Too Large; an error of pick, a nil Gate from it, or
// a cost function's wrong count of costs 500; any other error of the cost
// function 400 (500 if it matches throttle.ErrInvalidOption, the server's
// config). A nil next, a nil pick, Shared of a nil Gate and a nil option
// panic here, as http.ServeMux.Handle panics for a nil handler: they are
// bugs of the program. Any Gate will do: redisbucket's Limiter puts every
// replica of a server under one quota.
//
// Every answer, admitted or not, carries the state of a Gate that is a
// Meter in the IETF RateLimit-Policy and RateLimit fields by default (see
// WriteIETF and WithQuotaHeaders), so that clients can pace themselves.
// Those values are made once per limit and state and shared between
// answers: replace a field (Set, Add, Del) rather than write into the
// slice the header holds.
//
// An admitted request's handler is given a ResponseWriter of Handler's,
// through which RequestPermit finds the request's Permit; it flushes,
// hijacks and unwraps to the server's as http.ResponseController expects.
func Handler(next http.Handler, pick Picker, opts ...Option) http.Handler {
	if next == nil {
		// As http.ServeMux.Handle does: a nil handler is a bug to report
		// where it is made, not a nil call on the first request.
		panic("throttle: Handler: nil next handler")
	}
	if pick == nil {
		panic("throttle: Handler: nil Picker (for no limit, Shared of a Limiter at rate throttle.Inf)")
	}
	if g, ok := sharedGate(pick); ok {
		if newGate(g, nil).none {
			panic("throttle: Handler: Shared of a nil Gate (was its constructor's error ignored?)")
		}
	}
	h := &handler{next: next, pick: pick, ietf: true, headers: WriteIETF}
	h.keys, _ = pick.(keyPicker)
	h.rejected, h.reply = h.tooMany, newTooManyReply()
	for i, opt := range opts {
		if opt == nil {
			panic(errs.InvalidOptionf("Handler given a nil Option (option %d)", i))
		}
		if err := opt(&settings{h: h}); err != nil {
			panic(err)
		}
	}
	h.memo = headers.NewIETFMemo()
	return h
}

type handler struct {
	next       http.Handler
	pick       Picker
	keys       keyPicker // pick, if its Gates are keys of a Keyed (PerKey)
	cost       CostFunc
	customCost bool // cost is set: without it a request costs 1 on every limit
	ietf       bool // headers is WriteIETF: PerKey may hand over cached values
	headers    func(http.Header, []throttle.LimitStatus)
	rejected   func(http.ResponseWriter, *http.Request, time.Duration)
	states     sync.Pool // of *reqState
	gates      gateCache // what the Gates pick chose can do
	reply      tooManyReply
	memo       *headers.IETFMemo // header values made once
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st, _ := h.states.Get().(*reqState)
	if st == nil {
		st = &reqState{h: h}
		st.w.st = st
	}
	st.r = r
	if h.keys != nil && !h.customCost {
		if st.slot == nil {
			st.slot = h.keys.newSlot()
		}
		st.slot.pick(r)
		h.admit(w, r, st, st.slot, nil)
		st.reset()
		h.states.Put(st)
		return
	}
	g, err := h.pick.Pick(r)
	ad, admits := g.(throttle.Admitter)
	switch {
	case err != nil:
		h.pickFailed(w, err)
	case admits && !h.customCost:
		tk, _ := g.(throttle.Taker)
		h.admit(w, r, st, ad, tk)
	default:
		if gt := h.gates.Into(g, &st.gate); gt.none {
			h.pickFailed(w, noGate(r))
		} else {
			h.serve(w, r, st, gt)
		}
	}
	st.reset()
	h.states.Put(st)
}

// admit admits or refuses r on ad at its default cost: one step decides
// and reads the status, with no gate to find, as a key's Gate under PerKey
// decides on the key's compact record. The costs are kept for a Permit
// when ad is tk, a Taker, or a key slot, whose Gate a Permit will take.
func (h *handler) admit(w http.ResponseWriter, r *http.Request, st *reqState, ad throttle.Admitter, tk throttle.Taker) {
	ok, wait, status, err := ad.Admit(st.status[:0], nil)
	if err != nil {
		if errors.Is(err, throttle.ErrInvalidOption) || errors.Is(err, throttle.ErrTooManyKeys) {
			h.pickFailed(w, err)
		} else {
			h.costFailed(w, err)
		}
		return
	}
	h.writeStatus(w.Header(), status)
	if !ok {
		h.refuse(w, r, wait)
		return
	}
	if tk != nil || ad == st.slot {
		st.tk = tk
		st.keep(h.gates.Ones.Get(len(status)))
	}
	st.w.ResponseWriter = w
	h.next.ServeHTTP(&st.w, r)
}

// writeStatus writes the rate-limit headers of status, which is storage
// of a reqState: the IETF fields from the memos, or through the writer
// given with WithQuotaHeaders, with a copy of its own, which it may keep.
func (h *handler) writeStatus(hd http.Header, status []throttle.LimitStatus) {
	if h.ietf {
		h.memo.Write(hd, status)
		return
	}
	h.headers(hd, slices.Clone(status))
}

func (h *handler) pickFailed(w http.ResponseWriter, err error) {
	http.Error(w, "choosing the rate limiter: "+err.Error(), http.StatusInternalServerError)
}

// serve admits or refuses r on the Gate g, the same for every Gate: a
// Taker's costs are taken without a Permit, which is made only if the
// handler asks for one (RequestPermit), another's through
// TryAcquirePermit; a Meter's status makes the headers.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, st *reqState, g *gate) {
	costs, served := h.costsOf(w, r, g)
	if served {
		return
	}
	var ok bool
	var err error
	var p throttle.Permit
	if g.tk != nil {
		ok, err = g.tk.TryAcquire(costs...)
	} else {
		p, ok, err = g.g.TryAcquirePermit(costs...)
	}
	if err != nil {
		h.costFailed(w, err)
		return
	}
	if g.meter != nil {
		h.writeStatus(w.Header(), g.meter.Status(st.status[:0]))
	}
	if !ok {
		h.refuseOn(w, r, g.g, costs)
		return
	}
	if g.tk != nil {
		st.took(g.tk, costs)
	} else {
		st.p, st.asked = p, true
	}
	st.w.ResponseWriter = w
	h.next.ServeHTTP(&st.w, r)
}

// costError answers a request whose cost function failed: 400, the
// request's fault (a body that cannot be read), unless the error is of
// the server's config (an llm.Config naming none of the Gate's limits,
// throttle.ErrInvalidOption), answered 500.
func costError(w http.ResponseWriter, err error) {
	status := http.StatusBadRequest
	if errors.Is(err, throttle.ErrInvalidOption) {
		status = http.StatusInternalServerError
	}
	http.Error(w, "request cost: "+err.Error(), status)
}

// costsOf returns r's costs on g, or served once it has answered r
// itself: with an error for a cost function that failed or gave other
// than one cost per limit (its bug, not the client's: a 500), or through
// next for a request that costs nothing.
func (h *handler) costsOf(w http.ResponseWriter, r *http.Request, g *gate) (costs []int64, served bool) {
	if !h.customCost {
		return g.ones, false
	}
	n := len(g.limits)
	costs, err := h.cost(r, g.g)
	switch {
	case err != nil:
		costError(w, err)
	case len(costs) != n:
		http.Error(w, "request cost: "+errs.CostCount(len(costs), n, "bucket").Error(), http.StatusInternalServerError)
	case costsFree(costs):
		h.next.ServeHTTP(w, r)
	default:
		return costs, false
	}
	return nil, true
}

// refuseOn answers a request g does not cover now, with the wait g gives
// for its costs (-1, never, if g gives none).
func (h *handler) refuseOn(w http.ResponseWriter, r *http.Request, g throttle.Gate, costs []int64) {
	wait, err := g.WaitTime(costs...)
	if err != nil {
		wait = -1
	}
	h.refuse(w, r, wait)
}

// costFailed answers a request whose costs the limiter turned away.
func (h *handler) costFailed(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	if errors.Is(err, throttle.ErrCostExceedsCapacity) {
		status = http.StatusRequestEntityTooLarge
	}
	http.Error(w, err.Error(), status)
}

// refuse answers a request the limiter does not cover now, wait being how
// long until it would, or -1 if never.
func (h *handler) refuse(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	h.memo.SetRetry(w.Header(), wait)
	h.rejected(w, r, wait)
}

// tooMany is the default writer of refused requests: what
// http.Error(w, "429 too many requests", 429) writes, from values made once.
func (h *handler) tooMany(w http.ResponseWriter, _ *http.Request, _ time.Duration) {
	hd := w.Header()
	delete(hd, "Content-Length")
	hd["Content-Type"], hd["X-Content-Type-Options"] = h.reply.contentType, h.reply.nosniff
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write(h.reply.body)
}

// tooManyReply is tooMany's header values and body, which it puts into
// every refusal as they are: one-element slices of capacity one, so that
// an Add to the field makes a new slice.
type tooManyReply struct {
	contentType, nosniff []string
	body                 []byte
}

func newTooManyReply() tooManyReply {
	return tooManyReply{
		contentType: []string{"text/plain; charset=utf-8"},
		nosniff:     []string{"nosniff"},
		body:        []byte("429 too many requests\n"),
	}
}

// WriteIETF writes status as the RateLimit-Policy and RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers-10, one policy per bucket, named
// after the bucket ("default" for a bucket without a name): q and w are the
// bucket's rate over a whole number of seconds (Per(500, time.Minute) is
// q=500;w=60, Per(1, 100*time.Millisecond) is q=10;w=1), qu the status's
// Unit when it has one other than requests, r the whole tokens
// remaining and t the seconds until the bucket is full again, rounded up. It
// replaces any such fields already in h.
func WriteIETF(h http.Header, status []throttle.LimitStatus) {
	h.Del("Ratelimit-Policy")
	h.Del("Ratelimit")
	for _, s := range status {
		name := s.Name
		if name == "" {
			name = "default"
		}
		q, window := fields.PolicyWindow(s.Rate.Tokens(), s.Rate.Period())
		reset := s.Reset
		if reset < 0 {
			reset = time.Duration(1<<63 - 1)
		}
		headers.AddIETFUnit(h, name, s.Unit, q, window, s.Remaining, reset)
	}
}
