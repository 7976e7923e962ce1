package throttle

import (
	"fmt"
	"net/http"
)

// PerKey returns a LimiterFunc that puts each request under the limiter of
// its key in k, key(r) being an API key, a host or a model, say (see
// HeaderKey, HostKey, ModelKey). The key's limiter is held while the request
// uses it, so a pause a server imposes on the key lasts as long as it
// should. A key whose config gives no valid limits fails the request with an
// error matching ErrInvalidLimit.
func PerKey[K comparable](k *Keyed[K], key func(*http.Request) K) LimiterFunc {
	return func(r *http.Request) (*Limiter, error) {
		kk := key(r)
		l := k.Limiter(kk)
		if l == nil {
			return nil, fmt.Errorf("%w: key %v", ErrInvalidLimit, kk)
		}
		return l, nil
	}
}
