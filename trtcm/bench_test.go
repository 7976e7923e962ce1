package trtcm

import (
	"testing"
	"time"

	"github.com/throttlekit/throttle"
)

// newBenchMarker returns a Marker whose buckets never run dry in a
// benchmark: every request of cost 1 is green.
func newBenchMarker(b *testing.B) *Marker {
	m, err := New(throttle.Per(1_000_000_000, time.Second), 1<<40, throttle.Per(2_000_000_000, time.Second), 1<<41)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkMarkerMark is Mark of a green request: it must not allocate.
func BenchmarkMarkerMark(b *testing.B) {
	m := newBenchMarker(b)
	b.ReportAllocs()
	for b.Loop() {
		if c := m.Mark(1); c != Green {
			b.Fatalf("Mark = %v", c)
		}
	}
}

// BenchmarkMarkerAcquireSettle is the Marker as a Gate: Acquire of a green
// request and the Settle of its Permit, the path of a Transport over it.
func BenchmarkMarkerAcquireSettle(b *testing.B) {
	m := newBenchMarker(b)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		p, err := m.Acquire(ctx, 2)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Settle(1); err != nil {
			b.Fatal(err)
		}
	}
}
