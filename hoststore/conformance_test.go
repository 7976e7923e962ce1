package hoststore_test

import (
	"path/filepath"
	"testing"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/hoststore"
	"github.com/throttlekit/throttle/throttletest"
)

// TestConformance runs the stores' conformance suite on a Limiter in a
// host's file, through a second handle as a second process would.
func TestConformance(t *testing.T) {
	throttletest.Conformance(t, func(t *testing.T, capacity int64, rate throttle.Rate) throttle.Gate {
		path := filepath.Join(t.TempDir(), "quota")
		open(t, path)
		l, err := hoststore.NewLimiter(open(t, path), "conformance", capacity, rate)
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
}
