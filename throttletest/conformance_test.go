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
