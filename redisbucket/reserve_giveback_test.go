package redisbucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// backLimits is a token a minute. (A second limit that does not bind is
// taken as at the instant, lowered by what it would refill past its
// capacity: its level then holds a sleeper nearly as long, whatever is
// given back on the first.)
var backLimits = []redisbucket.Limit{{Name: "tokens", Capacity: 10, Rate: throttle.Per(1, time.Minute)}}

// reserveAsleep starts a reservation of tokens tokens and
// returns once it sleeps; the channel gets its error when it goes.
func reserveAsleep(t *testing.T, r *rig, l *redisbucket.Limiter, tokens int64) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		p, err := l.Acquire(context.Background(), tokens)
		if err == nil {
			err = p.Settle(tokens)
		}
		done <- err
	}()
	untilAsleep(t, r)
	return done
}

// goes fails the test unless the sleeper behind done goes within 10 s,
// the fake clock standing still.
func goes(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the sleeper still sleeps, the clock standing still: %s", what)
	}
}

// A reserved sleeper whose queue ahead a settlement of this process gave
// back to goes when the give-back covers it, not at the instant it was
// given before: no other call need carry the give-back (a Limiter.Settle
// waits for the next call, which a sleeper does not make), and a permit's
// settlement counts as it lands. Before, an LLM call reserved behind
// estimates (max_tokens) waited as if they had all been spent, and the
// tokens they gave back went to whoever reserved next.
func TestReservedSleeperGoesWithGiveBacks(t *testing.T) {
	for _, name := range []string{"Limiter.Settle", "Permit.Settle"} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			l := r.limiter("rback-"+name, backLimits, redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0))
			ctx := context.Background()
			var giveBack func() error
			if name == "Limiter.Settle" {
				if _, err := l.Take(ctx, 10); err != nil {
					t.Fatal(err)
				}
				giveBack = func() error { return l.Settle([]int64{10}, []int64{2}) }
			} else {
				p, err := l.Acquire(ctx, 10)
				if err != nil {
					t.Fatal(err)
				}
				giveBack = func() error { return p.Settle(2) }
			}
			done := reserveAsleep(t, r, l, 5)  // 5 minutes at a token a minute
			if err := giveBack(); err != nil { // 8 back: covered
				t.Fatal(err)
			}
			goes(t, done, "a give-back of 8 covers the 5 it waits for")
			if got := levels(t, l)[0]; got != 3 {
				t.Fatalf("tokens %v after 10 taken, 8 back and 5 taken, want 3", got)
			}
		})
	}
}

// A give-back that covers only part of a sleeper's wait brings its
// instant forward by what it covers and no further: every window still
// admits at most what the limits allow.
func TestReservedSleeperGoesNoSoonerThanCovered(t *testing.T) {
	r := newRig(t)
	l := r.limiter("rbackpart", backLimits, redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0))
	ctx := context.Background()
	if _, err := l.Take(ctx, 10); err != nil {
		t.Fatal(err)
	}
	start := r.fc.Now()
	granted := make(chan time.Time, 1)
	go func() {
		if _, err := l.Acquire(ctx, 5); err != nil { // 5 minutes
			t.Error(err)
		}
		granted <- r.fc.Now()
	}()
	untilAsleep(t, r)
	if err := l.Settle([]int64{10}, []int64{7}); err != nil { // 3 back: 2 minutes left
		t.Fatal(err)
	}
	if _, err := l.Tokens(ctx); err != nil { // the give-back has landed by its reply
		t.Fatal(err)
	}
	r.advance(2*time.Minute - time.Second)
	// Not gone a second early. Nothing marks a sleeper that stays asleep,
	// so this looks for a grant for a bounded time: it cannot fail a
	// sleeper that waits as it should, only miss one that went early.
	select {
	case at := <-granted:
		t.Fatalf("granted at +%v, before the give-back of 3 and the refill covered it at +2m0s", at.Sub(start))
	case <-time.After(200 * time.Millisecond):
	}
	r.advance(time.Second)
	select {
	case at := <-granted:
		if want := start.Add(2 * time.Minute); !at.Equal(want) {
			t.Fatalf("granted at +%v, want +2m0s: the give-back of 3 and 2 minutes' refill cover it, no less", at.Sub(start))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still asleep 2 minutes on, with the give-back of 3 covering the rest")
	}
}
