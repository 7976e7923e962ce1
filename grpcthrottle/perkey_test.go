package grpcthrottle_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/grpcthrottle"
)

// HashedMetadataKey keys a server's calls by a hash of the metadata: the
// same value the same key, another value another, and a key of a
// megabyte costs the Keyed eight bytes.
func TestHashedMetadataKey(t *testing.T) {
	key := grpcthrottle.HashedMetadataKey("X-Api-Key")
	in := func(v string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", v))
	}
	a, b := key(in("a"), "/m"), key(in("b"), "/m")
	if a == b || key(in("a"), "/m") != a {
		t.Errorf("keys %x, %x: want the same value to give the same key, another another", a, b)
	}
	if key(context.Background(), "/m") != key(in(""), "/m") {
		t.Error("a call without the metadata does not get the empty value's key")
	}
	other := grpcthrottle.HashedMetadataKey("x-api-key")
	if other(in("a"), "/m") == a {
		t.Error("two functions share their seed")
	}
}

// What a server's per-key admission allocates, its own and the Keyed's,
// with a stub handler: grpc-go's copy of the metadata value, and the
// Keyed's Limiter for the key and what holds it. A guard against more:
// the goal of one allocation needs the server to decide on the Keyed's
// compact state, as httpthrottle's LimitHandler does, which it does not.
func TestPerKeyAllocations(t *testing.T) {
	keyed := throttle.NewKeyed(func(uint64) []throttle.Limit {
		return []throttle.Limit{{Name: "requests", Capacity: 1 << 60, Rate: throttle.Per(1<<40, time.Second)}}
	}, throttle.WithClock(clockwork.NewRealClock()))
	srv := grpcthrottle.NewServer(grpcthrottle.PerKey(keyed, grpcthrottle.HashedMetadataKey("x-api-key")))
	f := srv.UnaryServerInterceptor()
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", strings.Repeat("k", 1<<10)))
	info := &grpc.UnaryServerInfo{FullMethod: "/grpc.testing.TestService/UnaryCall"}
	reply := &testpb.SimpleResponse{}
	handler := func(context.Context, any) (any, error) { return reply, nil }
	run := func() { _, _ = f(ctx, &testpb.SimpleRequest{}, info, handler) }
	run()
	if got := testing.AllocsPerRun(1000, run); got > 5 {
		t.Errorf("%v allocations a call, want at most 5", got)
	}
}

// BenchmarkPerKeyMemory measures the heap a server's Keyed holds per key
// admitted through PerKey, for keys of 1 KiB sent as metadata, by
// MetadataKey (the value held whole) and by HashedMetadataKey.
func BenchmarkPerKeyMemory(b *testing.B) {
	const keys = 4096
	value := strings.Repeat("k", 1<<10)
	limits := []throttle.Limit{{Name: "requests", Capacity: 10, Rate: throttle.Per(10, time.Second)}}
	for _, tc := range []struct {
		name string
		pick func() (grpcthrottle.Pick, func() int)
	}{
		{"MetadataKey", func() (grpcthrottle.Pick, func() int) {
			k := throttle.NewKeyed(func(string) []throttle.Limit { return limits })
			return grpcthrottle.PerKey(k, grpcthrottle.MetadataKey("x-api-key")), k.Len
		}},
		{"HashedMetadataKey", func() (grpcthrottle.Pick, func() int) {
			k := throttle.NewKeyed(func(uint64) []throttle.Limit { return limits })
			return grpcthrottle.PerKey(k, grpcthrottle.HashedMetadataKey("x-api-key")), k.Len
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				pick, n := tc.pick()
				f := grpcthrottle.NewServer(pick).UnaryServerInterceptor()
				info := &grpc.UnaryServerInfo{FullMethod: "/grpc.testing.TestService/UnaryCall"}
				handler := func(context.Context, any) (any, error) { return nil, nil }
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for i := range keys {
					ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", value+strconv.Itoa(i)))
					_, _ = f(ctx, nil, info, handler)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				if n() != keys {
					b.Fatalf("%d keys held, want %d", n(), keys)
				}
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/keys, "B/key")
				runtime.KeepAlive(pick)
			}
		})
	}
}
