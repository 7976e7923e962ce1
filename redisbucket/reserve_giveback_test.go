package redisbucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// backLimits bind on tokens, a token a minute. Requests never bind: a
// reservation takes them as at its instant, lowered by what they would
// refill past their capacity by then, below zero for minutes, though they
// held the cost all along.
var backLimits = []redisbucket.Limit{
	{Name: "requests", Capacity: 100, Rate: throttle.Per(100, time.Minute)},
	{Name: "tokens", Capacity: 10, Rate: throttle.Per(1, time.Minute)},
}

// reserveAsleep starts a reservation of tokens tokens and
// returns once it sleeps; the channel gets its error when it goes.
func reserveAsleep(t *testing.T, r *rig, l *redisbucket.Limiter, tokens int64) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		p, err := l.Acquire(context.Background(), 1, tokens)
		if err == nil {
			err = p.Settle(1, tokens)
		}
		done <- err
	}()
	untilAsleep(t, r)
	return done
}

// settleLanded settles costs l took without a permit and returns once the
// give-back has landed: a read of the levels carries it if no call has.
func settleLanded(t *testing.T, l *redisbucket.Limiter, taken, actual []int64) {
	t.Helper()
	if err := l.Settle(taken, actual); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Tokens(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// notGrantedSoon fails the test if the sleeper behind granted goes within
// 200 ms, the fake clock standing still: nothing marks a sleeper that
// stays asleep, so this cannot fail one that waits as it should, only
// miss one that went early.
func notGrantedSoon(t *testing.T, granted <-chan time.Time, start time.Time, what string) {
	t.Helper()
	select {
	case at := <-granted:
		t.Fatalf("granted at +%v, %s", at.Sub(start), what)
	case <-time.After(200 * time.Millisecond):
	}
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
				if _, err := l.Take(ctx, 1, 10); err != nil {
					t.Fatal(err)
				}
				giveBack = func() error { return l.Settle([]int64{1, 10}, []int64{1, 2}) }
			} else {
				p, err := l.Acquire(ctx, 1, 10)
				if err != nil {
					t.Fatal(err)
				}
				giveBack = func() error { return p.Settle(1, 2) }
			}
			done := reserveAsleep(t, r, l, 5)  // 5 minutes at a token a minute
			if err := giveBack(); err != nil { // 8 back: covered
				t.Fatal(err)
			}
			goes(t, done, "a give-back of 8 covers the 5 it waits for")
			if got := levels(t, l)[1]; got != 3 {
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
	if _, err := l.Take(ctx, 1, 10); err != nil {
		t.Fatal(err)
	}
	start := r.fc.Now()
	granted := acquireAsleep(t, r, l, 1, 5)           // 5 minutes
	settleLanded(t, l, []int64{1, 10}, []int64{1, 7}) // 3 back: 2 minutes left
	r.advance(2*time.Minute - time.Second)
	notGrantedSoon(t, granted, start, "before the give-back of 3 and the refill covered it at +2m0s")
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

// A limit that did not hold the cost when the reservation was made, though
// it would be full by the instant, still holds the sleeper after a
// give-back on another: lowered to be taken as at the instant, its level
// before then is not known, and the sleeper keeps its instant.
func TestReservedSleeperHeldByALimitShortAtTheReservation(t *testing.T) {
	r := newRig(t)
	l := r.limiter("rbackshort", []redisbucket.Limit{
		{Name: "requests", Capacity: 2, Rate: throttle.Per(2, time.Minute)},
		{Name: "tokens", Capacity: 10, Rate: throttle.Per(1, time.Minute)},
	}, redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0))
	ctx := context.Background()
	if _, err := l.Take(ctx, 2, 10); err != nil {
		t.Fatal(err)
	}
	start := r.fc.Now()
	granted := acquireAsleep(t, r, l, 1, 5)           // tokens 5 minutes, requests 30 s
	settleLanded(t, l, []int64{2, 10}, []int64{2, 0}) // tokens covered; requests not
	r.advance(30*time.Second - time.Millisecond)
	notGrantedSoon(t, granted, start, "before a request refilled at +30s")
	r.advance(5 * time.Minute)
	if at := <-granted; at.Before(start.Add(30 * time.Second)) {
		t.Fatalf("granted at +%v", at.Sub(start))
	}
}

// A give-back that a call carried while a reservation was in flight, and
// that Redis applied after the reservation, counts for its sleeper: the
// id's sequence numbers both as Redis ran them. Counted by when they were
// sent, it did not (sent before the reservation's reply came back), and
// the sleeper slept to its instant: concurrent calls of one process
// carrying settlements stalled a Transport's burst of LLM calls reserved
// behind their estimates (TestTransportLLMBurstOnEstimates with
// reservations, 5 runs of 30).
func TestReservedSleeperCountsAGiveBackAppliedAfterIt(t *testing.T) {
	r := newRig(t)
	client := r.be.Client()
	hold := &blocking{entered: make(chan struct{}), release: make(chan struct{})}
	client.AddHook(hold)
	l, err := redisbucket.NewLimiter(client, "rbackseq", backLimits,
		r.opts(redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ctx := context.Background()
	if _, err := l.Take(ctx, 1, 10); err != nil {
		t.Fatal(err)
	}
	if err := l.Settle([]int64{1, 10}, []int64{1, 5}); err != nil { // 5 back, with the next call
		t.Fatal(err)
	}
	hold.hold.Store(true)
	looked := make(chan error, 1)
	go func() {
		_, err := l.Tokens(ctx) // carries the give-back, held on its way
		looked <- err
	}()
	<-hold.entered
	done := reserveAsleep(t, r, l, 5) // tokens at -5: five minutes, or the give-back
	close(hold.release)
	if err := <-looked; err != nil {
		t.Fatal(err)
	}
	goes(t, done, "the give-back applied after the reservation covers it")
}
