package redisbucket_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// By default a waiting Acquire reserves: three waiters cost one call each
// (and the first sleeper, whose feed was not yet live, one look at its
// instant), where deciding again after each sleep costs two each. The
// pause feed opens at the first reservation that sleeps, not before.
func TestReservationsByDefault(t *testing.T) {
	limits := []redisbucket.Limit{{Name: "requests", Capacity: 1, Rate: throttle.Per(10, time.Second)}}
	for _, tc := range []struct {
		name     string
		opts     []redisbucket.Option
		reserved bool
	}{{"default", nil, true}, {"WithoutReservations", []redisbucket.Option{redisbucket.WithoutReservations()}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			l, err := redisbucket.NewLimiter(r.be.Client(), "rdefault", limits, append(r.defaultOpts(), tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			if ok, err := l.TryAcquire(1); !ok || err != nil {
				t.Fatalf("empty the bucket: %v %v", ok, err)
			}
			if redisbucket.FeedOpened(l) {
				t.Fatal("the feed opened before any wait")
			}
			calls := l.Stats().Calls
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for k := range 3 {
				done := make(chan error, 1)
				go func() {
					// No deadline: ctx's is on the real clock. Unsettled:
					// a settlement is a call of its own either way.
					_, err := l.Acquire(context.Background(), 1)
					done <- err
				}()
				if err := r.fc.BlockUntilContext(ctx, 1); err != nil {
					t.Fatalf("waiter %d: %v", k, err)
				}
				r.advance(100 * time.Millisecond)
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				for tc.reserved && !redisbucket.FeedLive(l) {
					if ctx.Err() != nil {
						t.Fatal("the feed never went live")
					}
					runtime.Gosched()
				}
			}
			n := l.Stats().Calls - calls
			if opened := redisbucket.FeedOpened(l); opened != tc.reserved {
				t.Fatalf("feed opened: %v, want %v", opened, tc.reserved)
			}
			want := int64(6)
			if tc.reserved {
				want = 4
			}
			if n != want {
				t.Fatalf("%d calls for 3 waits, want %d", n, want)
			}
		})
	}
}
