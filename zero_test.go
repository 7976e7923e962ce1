package throttle_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/htb"
)

// TestZeroValues: a value made without its constructor either works, as
// the zero x/time/rate Limiter does (it rejects every event), or fails
// with an error that says what to do, never with a nil dereference.
func TestZeroValues(t *testing.T) {
	t.Run("Bucket is closed", func(t *testing.T) {
		var b throttle.Bucket
		var wg sync.WaitGroup
		for range 8 { // the first uses race to make it closed
			wg.Go(func() {
				if ok, err := b.TryAcquire(1); ok || err != nil {
					t.Errorf("TryAcquire(1) = %v, %v; want false, nil", ok, err)
				}
			})
		}
		wg.Wait()
		if err := b.Acquire(t.Context(), 1); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
			t.Errorf("Acquire: %v, want ErrCostExceedsCapacity", err)
		}
		if _, err := b.WaitTime(1); !errors.Is(err, throttle.ErrCostExceedsCapacity) {
			t.Errorf("WaitTime: %v, want ErrCostExceedsCapacity", err)
		}
		if b.Tokens() != 0 || b.Capacity() != 0 {
			t.Errorf("Tokens %v, Capacity %d; want 0, 0", b.Tokens(), b.Capacity())
		}
	})
	for _, g := range []struct {
		name string
		g    throttle.Gate
	}{{"Limiter", &throttle.Limiter{}}, {"htb.Limiter", &htb.Limiter{}}} {
		t.Run(g.name+" has no limits", func(t *testing.T) {
			if _, err := g.g.Acquire(t.Context(), 1); !errors.Is(err, throttle.ErrInvalidCost) {
				t.Errorf("Acquire: %v, want ErrInvalidCost", err)
			}
			if _, ok, err := g.g.TryAcquirePermit(1); ok || !errors.Is(err, throttle.ErrInvalidCost) {
				t.Errorf("TryAcquirePermit: %v, %v; want ErrInvalidCost", ok, err)
			}
			if _, err := g.g.WaitTime(1); !errors.Is(err, throttle.ErrInvalidCost) {
				t.Errorf("WaitTime: %v, want ErrInvalidCost", err)
			}
			if len(g.g.Limits()) != 0 {
				t.Errorf("Limits() = %v", g.g.Limits())
			}
		})
	}
	t.Run("NewKeyed(nil)", func(t *testing.T) {
		k := throttle.NewKeyed[string](nil)
		if _, err := k.TryAcquire("a", 1); !errors.Is(err, throttle.ErrInvalidOption) {
			t.Errorf("TryAcquire: %v, want ErrInvalidOption", err)
		}
	})
}
