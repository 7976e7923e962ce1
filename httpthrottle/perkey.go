package httpthrottle

import (
	"fmt"
	"hash/maphash"
	"net/http"

	"github.com/throttlekit/throttle"
)

// PerKey returns a LimiterFunc that puts each request under the limiter of
// its key in k, key(r) being an API key, a host or a model, say (see
// HeaderKey, HashedHeaderKey, HostKey, ModelKey). The key's limiter is held
// while the request uses it, so a pause a server imposes on the key lasts as
// long as it should. A key whose config gives no valid limits fails the
// request with an error matching throttle.ErrInvalidOption.
//
// Under LimitHandler the LimiterFunc hands the request to k instead of
// returning a Limiter (it returns a nil Gate): the request is decided on
// the key's compact state, so a key that clients merely spend on stays
// a compact record (see Keyed) and never gets a Limiter of its own (see Keyed and
// RequestPermit). A pick function that wraps it for LimitHandler must
// give it the request it was given and return its result unchanged; one
// that gives it another (r.WithContext, say) gets the key's Limiter, with
// the same decisions at a Limiter's cost in memory.
func PerKey[K comparable](k *throttle.Keyed[K], key func(*http.Request) K) LimiterFunc {
	kp := &keyedPick[K]{k: k, adm: core.Keyed(k).(keyedAdmitter[K]), key: key}
	return func(r *http.Request) (throttle.Gate, error) {
		if st := kp.seen.taking(r); st != nil {
			st.keyed = kp
			return nil, nil
		}
		kk := key(r)
		l := k.Limiter(kk)
		if l == nil {
			return nil, fmt.Errorf("%w: key %v", throttle.ErrInvalidOption, kk)
		}
		return l, nil
	}
}

// HashedHeaderKey returns a key function like HeaderKey(name), but one that
// keys by a 64-bit hash of the header's value instead of the value itself,
// so that a Keyed used by PerKey holds no API key or token a client sent,
// and a key costs eight bytes however long the value. The hash is
// hash/maphash's, seeded at random by each call of HashedHeaderKey: the keys
// of one function are not those of another, nor of another process, and a
// client cannot choose values that collide with another client's key
// without knowing the seed. Two values share a key with probability about
// 2^-64. To act on a client's key (PauseUntil, say), compute it with the
// same function, on a request carrying the value. A request without the
// header gets the key of the empty value.
func HashedHeaderKey(name string) func(*http.Request) uint64 {
	name = http.CanonicalHeaderKey(name)
	seed := maphash.MakeSeed()
	return func(r *http.Request) uint64 {
		var v string
		if vs := r.Header[name]; len(vs) > 0 {
			v = vs[0]
		}
		return maphash.String(seed, v)
	}
}
