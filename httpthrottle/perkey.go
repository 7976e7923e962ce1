package httpthrottle

import (
	"hash/maphash"
	"net/http"

	"github.com/throttlekit/throttle"
)

// PerKey returns a LimiterFunc that puts each request under the limits of
// its key in k, key(r) being an API key, a host or a model, say (see
// HeaderKey, HashedHeaderKey, HostKey, ModelKey): the key's Gate
// (Keyed.Gate), which decides on the key's compact record, so that a key
// that clients merely spend on through LimitHandler stays a few dozen
// bytes, and one a server pauses, or a request waits on, gets the key's
// Limiter for as long as it needs one (see Keyed). A key whose config
// gives no valid limits fails the request with an error matching
// throttle.ErrInvalidOption. A pick function may wrap it, or give it
// another request: what it returns is a Gate like any other.
func PerKey[K comparable](k *throttle.Keyed[K], key func(*http.Request) K) LimiterFunc {
	return func(r *http.Request) (throttle.Gate, error) {
		return k.Gate(key(r)), nil
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
