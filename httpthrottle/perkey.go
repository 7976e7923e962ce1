package httpthrottle

import (
	"hash/maphash"
	"net/http"
	"time"

	"github.com/throttlekit/throttle"
)

// PerKey returns a Picker that puts each request under the limits of its
// key in k, key(r) being an API key, a host or a model, say (see
// HeaderKey, HashedHeaderKey, HostKey, llm.ModelKey): the key's Gate
// (Keyed.Gate), which decides on the key's compact record, so that a key
// that clients merely spend on through a Handler stays a few dozen bytes,
// and one a server pauses, or a request waits on, gets the key's Limiter
// for as long as it needs one (see Keyed). A key whose config gives no
// valid limits fails the request with an error matching
// throttle.ErrInvalidOption.
//
// A Handler at the default cost decides on the key itself (Keyed.Admit),
// and makes the key's Gate only for a handler that asks for its Permit.
func PerKey[K comparable](k *throttle.Keyed[K], key func(*http.Request) K) Picker {
	return &perKey[K]{k: k, key: key}
}

// perKey is the Picker of PerKey.
type perKey[K comparable] struct {
	k   *throttle.Keyed[K]
	key func(*http.Request) K
}

func (p *perKey[K]) Pick(r *http.Request) (throttle.Gate, error) { return p.k.Gate(p.key(r)), nil }

func (p *perKey[K]) newSlot() keySlot { return &perKeySlot[K]{p: p} }

// keyPicker is a Picker whose Gates are keys of a Keyed, which a Handler
// admits through a keySlot of its own: with no Gate made per request.
type keyPicker interface {
	Picker
	newSlot() keySlot
}

// keySlot holds the key of the request a Handler admitted last.
type keySlot interface {
	throttle.Admitter
	// pick reads r's key into the slot.
	pick(r *http.Request)
	// gate returns the key's Gate.
	gate() throttle.Gate
}

// perKeySlot is PerKey's keySlot: one per request state of a Handler,
// reused from request to request, since a Handler has one Picker.
type perKeySlot[K comparable] struct {
	p   *perKey[K]
	key K
}

func (s *perKeySlot[K]) pick(r *http.Request) { s.key = s.p.key(r) }

func (s *perKeySlot[K]) gate() throttle.Gate { return s.p.k.Gate(s.key) }

func (s *perKeySlot[K]) Admit(dst []throttle.LimitStatus, costs []int64) (bool, time.Duration, []throttle.LimitStatus, error) {
	return s.p.k.Admit(s.key, dst, costs)
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
