package grpcthrottle

import (
	"context"
	"hash/maphash"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/throttlekit/throttle"
)

// Pick chooses the Gate a call goes through, as httpthrottle.Picker does
// for an HTTP request: one shared by every call, or one per method, API key
// or tenant. method is the full method name ("/pkg.Service/Method"); req is
// the request message of a unary call and nil for a stream, whose messages
// come later. A nil Gate with a nil error lets the call through unlimited;
// an error fails it (codes.Internal on the server, the error itself on the
// client) before it is sent or handled.
type Pick func(ctx context.Context, method string, req any) (throttle.Gate, error)

// Shared returns a Pick that puts every call under g.
func Shared(g throttle.Gate) Pick {
	return func(context.Context, string, any) (throttle.Gate, error) { return g, nil }
}

// KeyFunc returns the key of a call, for PerKey.
type KeyFunc func(ctx context.Context, method string) string

// PerKey returns a Pick that gives each key, as key says, its own limits
// from k: the key's Gate (Keyed.Gate), which decides on the key's compact
// record, so that a server's keys stay a few dozen bytes each while their
// clients merely spend (a pause, a wait or a Permit gives a key its
// Limiter until the Keyed drops it). key is a KeyFunc for a Keyed[string],
// whose keys hold the values clients send, or HashedMetadataKey's function
// for a Keyed[uint64], whose keys cost eight bytes however long the
// values: prefer it on a server, where clients choose their keys.
func PerKey[K comparable](k *throttle.Keyed[K], key func(ctx context.Context, method string) K) Pick {
	return func(ctx context.Context, method string, _ any) (throttle.Gate, error) {
		return k.Gate(key(ctx, method)), nil
	}
}

// HashedMetadataKey returns a key function like MetadataKey(name), but
// one that keys by a 64-bit hash of the value instead of the value
// itself, so that a Keyed used by PerKey holds no API key or token a
// client sent, and a key costs eight bytes however long the value, as
// httpthrottle.HashedHeaderKey does for HTTP. The hash is hash/maphash's,
// seeded at random by each call of HashedMetadataKey: the keys of one
// function are not those of another, nor of another process, and a client
// cannot choose values that collide with another client's key without
// knowing the seed. Two values share a key with probability about 2^-64.
// A call without the metadata gets the key of the empty value.
func HashedMetadataKey(name string) func(ctx context.Context, method string) uint64 {
	get := MetadataKey(name)
	seed := maphash.MakeSeed()
	return func(ctx context.Context, method string) uint64 {
		return maphash.String(seed, get(ctx, method))
	}
}

// MethodKey is the KeyFunc of the full method name.
func MethodKey(_ context.Context, method string) string { return method }

// MetadataKey returns a KeyFunc that reads the first value of the metadata
// name (an API key, a tenant): the incoming metadata on a server, the
// outgoing metadata on a client. A call without it gets the empty key.
// Names are case-insensitive, as gRPC's are.
func MetadataKey(name string) KeyFunc {
	name = strings.ToLower(name)
	return func(ctx context.Context, _ string) string {
		if v := metadata.ValueFromIncomingContext(ctx, name); len(v) > 0 {
			return v[0]
		}
		if md, ok := metadata.FromOutgoingContext(ctx); ok {
			if v := md.Get(name); len(v) > 0 {
				return v[0]
			}
		}
		return ""
	}
}

// JoinKeys returns a KeyFunc whose key is the keys of fs joined by a NUL
// byte, which gRPC metadata and method names never hold: the method and the
// tenant, say, so that each tenant has limits of its own per method.
func JoinKeys(fs ...KeyFunc) KeyFunc {
	return func(ctx context.Context, method string) string {
		var b strings.Builder
		for i, f := range fs {
			if i > 0 {
				b.WriteByte(0)
			}
			b.WriteString(f(ctx, method))
		}
		return b.String()
	}
}
