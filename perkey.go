package throttle

import (
	"fmt"
	"net/http"
)

// PerKey returns a LimiterFunc that puts each request under the limiter of
// its key in k, key(r) being an API key, a host or a model, say (see
// HeaderKey, HashedHeaderKey, HostKey, ModelKey). The key's limiter is held
// while the request uses it, so a pause a server imposes on the key lasts as
// long as it should. A key whose config gives no valid limits fails the
// request with an error matching ErrInvalidLimit.
//
// Under LimitHandler the LimiterFunc hands the request to k instead of
// returning a Limiter (it returns a nil one): the request is decided on
// the key's compact state, so a key that clients merely spend on stays
// about 80 bytes and never gets a Limiter of its own (see Keyed and
// RequestPermit). A pick function that wraps it for LimitHandler must
// return its result unchanged.
func PerKey[K comparable](k *Keyed[K], key func(*http.Request) K) LimiterFunc {
	kp := &keyedPick[K]{k: k, key: key}
	return func(r *http.Request) (*Limiter, error) {
		if st, ok := r.Context().Value(permitKey{}).(*reqState); ok && st.picking {
			st.keyed = kp
			return nil, nil
		}
		kk := key(r)
		l := k.Limiter(kk)
		if l == nil {
			return nil, fmt.Errorf("%w: key %v", ErrInvalidLimit, kk)
		}
		return l, nil
	}
}
