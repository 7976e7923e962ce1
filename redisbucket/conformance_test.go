package redisbucket_test

import (
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
	"github.com/throttlekit/throttle/redisbucket/internal/redistest"
	"github.com/throttlekit/throttle/throttletest"
)

// TestConformance runs the stores' conformance suite on a Limiter in a
// real redis-server, on the real clock the server's TIME follows (a
// miniredis's clock stands still, so it is skipped there). Without the
// headroom for the wire: the suite checks exact levels, and the headroom
// holds back what a limit refills over it from a full bucket, by design.
func TestConformance(t *testing.T) {
	be := redistest.New(t)
	if !be.Real() {
		t.Skip("the suite runs on the real clock: it needs a real redis-server")
	}
	throttletest.Conformance(t, func(t *testing.T, capacity int64, rate throttle.Rate) throttle.Gate {
		l, err := redisbucket.NewLimiter(be.Client(), "conformance-"+t.Name(), []redisbucket.Limit{{Name: "conformance", Capacity: capacity, Rate: rate}},
			redisbucket.WithPrefix(be.Prefix), redisbucket.WithCallTimeout(10*time.Second), redisbucket.WithFailurePolicy(redisbucket.FailClosed), redisbucket.WithWireHeadroom(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	})
}
