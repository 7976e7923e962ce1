package httpthrottle

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/internal/corelink"
)

// keyedAdmitter is what the core lends PerKey of a Keyed (corelink.Keyed):
// Admit is LimitHandler's TryAcquire of costs (nil: one on every limit) on
// key, with the status and, for a refusal, the wait, all read at one instant
// under the shard lock; for a key that has a Limiter, or whose overflow
// bucket has one, it returns that Limiter instead, in held if held is not
// nil. CostView returns what a cost function is shown for key: the key's
// Limiter if it has one (lim), else a view of its limits.
type keyedAdmitter[K comparable] interface {
	Admit(key K, costs []int64, status []throttle.LimitStatus, ietf bool) (*throttle.Limiter, corelink.Decision[throttle.LimitStatus], error)
	CostView(key K) (lim, view *throttle.Limiter, err error)
}

// keyedPick is PerKey's side of LimitHandler: it decides a request on the
// key's compact state, under one shard lock, so that a client key that is
// merely spending stays a compact record and never gets a Limiter.
type keyedPick[K comparable] struct {
	k    *throttle.Keyed[K]
	adm  keyedAdmitter[K] // k's decisions under its shard lock, lent by the core
	key  func(*http.Request) K
	seen markSeen // the LimitHandlers that run it
}

func (kp *keyedPick[K]) serve(h *limitHandler, w http.ResponseWriter, r *http.Request, st *reqState) {
	key := kp.key(r)
	var costs []int64 // nil: one on every limit
	if h.customCost {
		lim, view, err := kp.adm.CostView(key)
		if err != nil {
			h.pickFailed(w, kp.pickErr(key, err))
			return
		}
		if lim != nil {
			h.serve(w, r, st, h.gates.of(lim))
			return
		}
		if costs, err = h.cost(r, view); err != nil {
			costError(w, err)
			return
		}
		if costsFree(costs) {
			h.next.ServeHTTP(w, r)
			return
		}
	}
	lim, d, err := kp.adm.Admit(key, costs, st.status[:0], h.ietf)
	switch {
	case err != nil && (errors.Is(err, throttle.ErrInvalidOption) || errors.Is(err, throttle.ErrTooManyKeys)):
		h.pickFailed(w, kp.pickErr(key, err))
		return
	case err != nil:
		h.costFailed(w, err)
		return
	case lim != nil:
		h.serve(w, r, st, h.gates.of(lim))
		return
	}
	hd := w.Header()
	if d.Policy != nil && d.State != nil {
		hd["Ratelimit-Policy"], hd["Ratelimit"] = d.Policy, d.State
	} else {
		h.writeStatus(hd, d.Status)
	}
	if !d.OK {
		if d.Retry == nil {
			h.refuse(w, r, d.Wait)
			return
		}
		hd["Retry-After"] = d.Retry
		h.rejected(w, r, d.Wait)
		return
	}
	st.keep(d.Costs)
	st.lazy = true
	st.w.ResponseWriter = w
	h.next.ServeHTTP(&st.w, r)
}

// pickErr is the error PerKey's LimiterFunc gives for err.
func (kp *keyedPick[K]) pickErr(key K, err error) error {
	if errors.Is(err, throttle.ErrInvalidOption) {
		return fmt.Errorf("%w: key %v", throttle.ErrInvalidOption, key)
	}
	return err
}

// taker returns what a request admitted on a compact key settles its
// Permit through: the key's Limiter.
func (kp *keyedPick[K]) taker(st *reqState) throttle.Taker {
	if l := kp.k.Limiter(kp.key(st.r)); l != nil {
		return l
	}
	return nil
}
