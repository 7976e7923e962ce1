package throttletest_test

import (
	"testing"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/throttletest"
)

// TestConformanceMemory runs the stores' conformance suite on the
// in-process Limiter.
func TestConformanceMemory(t *testing.T) {
	throttletest.Conformance(t, func(t *testing.T, capacity int64, rate throttle.Rate) throttle.Gate {
		b, err := throttle.New(capacity, rate, throttle.WithName("conformance"))
		if err != nil {
			t.Fatal(err)
		}
		l, err := throttle.NewLimiter(b)
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
}

// TestConformanceKeyedGate runs it on a Keyed's Gate of one key, which
// decides on the key's compact record until the key needs a Limiter.
func TestConformanceKeyedGate(t *testing.T) {
	throttletest.Conformance(t, func(t *testing.T, capacity int64, rate throttle.Rate) throttle.Gate {
		k := throttle.NewKeyed(func(string) []throttle.Limit {
			return []throttle.Limit{{Name: "conformance", Capacity: capacity, Rate: rate}}
		})
		return k.Gate("tenant")
	})
}
