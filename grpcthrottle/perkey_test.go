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

// What a server's per-key admission allocates, with a stub handler: the
// key's Gate as an interface value (16 bytes for a hashed key, 24 for a
// string), and, for a key read from metadata, grpc-go's copy of the
// metadata value (metadata.ValueFromIncomingContext copies what it
// returns). The key's record is compact: no Limiter is made for it.
func TestPerKeyAllocations(t *testing.T) {
	limits := []throttle.Limit{{Name: "requests", Capacity: 1 << 60, Rate: throttle.Per(1<<40, time.Second)}}
	hashed := throttle.NewKeyed(func(uint64) []throttle.Limit { return limits }, throttle.WithClock(clockwork.NewRealClock()))
	byMethod := throttle.NewKeyed(func(string) []throttle.Limit { return limits }, throttle.WithClock(clockwork.NewRealClock()))
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", strings.Repeat("k", 1<<10)))
	info := &grpc.UnaryServerInfo{FullMethod: "/grpc.testing.TestService/UnaryCall"}
	req, reply := &testpb.SimpleRequest{}, &testpb.SimpleResponse{}
	handler := func(context.Context, any) (any, error) { return reply, nil }
	for _, tc := range []struct {
		name string
		pick grpcthrottle.Pick
		want float64
	}{
		{"MethodKey: the Gate", grpcthrottle.PerKey(byMethod, grpcthrottle.MethodKey), 1},
		{"HashedMetadataKey: the Gate and grpc-go's copy of the value", grpcthrottle.PerKey(hashed, grpcthrottle.HashedMetadataKey("x-api-key")), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := grpcthrottle.NewServer(tc.pick).UnaryServerInterceptor()
			run := func() {
				if _, err := f(ctx, req, info, handler); err != nil {
					t.Fatal(err)
				}
			}
			run()
			if got := testing.AllocsPerRun(1000, run); got > tc.want {
				t.Errorf("%v allocations a call, want at most %v", got, tc.want)
			}
		})
	}
}

// Keys a server admitted through PerKey are dropped by the Keyed's lazy
// sweep once idle and full, as later calls on other keys come: no Sweep,
// no garbage collection needed, since a key merely spending never gets a
// Limiter.
func TestPerKeyFreedWithoutSweep(t *testing.T) {
	clk := clockwork.NewFakeClock()
	keyed := throttle.NewKeyed(func(string) []throttle.Limit {
		return []throttle.Limit{{Name: "requests", Capacity: 10, Rate: throttle.Per(10, time.Second)}}
	}, throttle.WithClock(clk))
	f := grpcthrottle.NewServer(grpcthrottle.PerKey(keyed, grpcthrottle.MetadataKey("x-api-key"))).UnaryServerInterceptor()
	info := &grpc.UnaryServerInfo{FullMethod: "/grpc.testing.TestService/UnaryCall"}
	handler := func(context.Context, any) (any, error) { return nil, nil }
	call := func(key string) {
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", key))
		if _, err := f(ctx, nil, info, handler); err != nil {
			t.Fatal(err)
		}
	}
	const n = 1000
	for i := range n {
		call("old-" + strconv.Itoa(i))
	}
	if got := keyed.Len(); got != n {
		t.Fatalf("%d keys held, want %d", got, n)
	}
	clk.Advance(2 * time.Second) // past the keys' refill time: idle and full
	for i := range n {
		call("new-" + strconv.Itoa(i))
		call("new-" + strconv.Itoa(i))
	}
	if got := keyed.Len(); got > n+n/4 {
		t.Errorf("%d keys held after %d calls on %d new keys, want the %d idle ones mostly dropped", got, 2*n, n, n)
	}
}

// BenchmarkPerKeyMemory measures the heap a server's Keyed holds per key
// admitted through PerKey, for keys sent as metadata values of 1 KiB, by
// MetadataKey (the value held whole) and by HashedMetadataKey, for 4,096
// keys and for the default cap (524,288: "cap"), and reports the whole
// heap held at the cap in MB.
func BenchmarkPerKeyMemory(b *testing.B) {
	value := strings.Repeat("k", 1<<10)
	// A refill of hours: no key is idle and full, and dropped, during the run.
	limits := []throttle.Limit{{Name: "requests", Capacity: 10, Rate: throttle.Per(10, time.Hour)}}
	for _, tc := range []struct {
		name string
		keys int
		pick func() (grpcthrottle.Pick, func() int)
	}{
		{"MetadataKey", 4096, func() (grpcthrottle.Pick, func() int) {
			k := throttle.NewKeyed(func(string) []throttle.Limit { return limits })
			return grpcthrottle.PerKey(k, grpcthrottle.MetadataKey("x-api-key")), k.Len
		}},
		{"HashedMetadataKey", 4096, func() (grpcthrottle.Pick, func() int) {
			k := throttle.NewKeyed(func(uint64) []throttle.Limit { return limits })
			return grpcthrottle.PerKey(k, grpcthrottle.HashedMetadataKey("x-api-key")), k.Len
		}},
		{"HashedMetadataKey/cap", 524288, func() (grpcthrottle.Pick, func() int) {
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
				for i := range tc.keys {
					ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", value+strconv.Itoa(i)))
					_, _ = f(ctx, nil, info, handler)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				if n() != tc.keys {
					b.Fatalf("%d keys held, want %d", n(), tc.keys)
				}
				held := float64(after.HeapAlloc - before.HeapAlloc)
				b.ReportMetric(held/float64(tc.keys), "B/key")
				b.ReportMetric(held/1e6, "MB")
				runtime.KeepAlive(pick)
			}
		})
	}
}

// BenchmarkPerKeyAdmit is a server's admission of a unary call under
// PerKey with MetadataKey, with a stub handler: one key ("hot"), or 1,000
// keys in turn ("distinct").
func BenchmarkPerKeyAdmit(b *testing.B) {
	for _, keys := range []int{1, 1000} {
		name := "hot"
		if keys > 1 {
			name = "distinct"
		}
		b.Run(name, func(b *testing.B) {
			keyed := throttle.NewKeyed(func(string) []throttle.Limit {
				return []throttle.Limit{{Name: "requests", Capacity: 1 << 60, Rate: throttle.Per(1<<40, time.Second)}}
			})
			f := grpcthrottle.NewServer(grpcthrottle.PerKey(keyed, grpcthrottle.MetadataKey("x-api-key"))).UnaryServerInterceptor()
			info := &grpc.UnaryServerInfo{FullMethod: "/grpc.testing.TestService/UnaryCall"}
			handler := func(context.Context, any) (any, error) { return nil, nil }
			ctxs := make([]context.Context, keys)
			for i := range ctxs {
				ctxs[i] = metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", "key-"+strconv.Itoa(i)))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_, _ = f(ctxs[i], nil, info, handler)
				if i++; i == keys {
					i = 0
				}
			}
		})
	}
}
