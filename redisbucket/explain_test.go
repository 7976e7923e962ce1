package redisbucket_test

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/httpthrottle"
	"github.com/throttlekit/throttle/redisbucket"
)

// A 429 with Retry-After that one process's Transport hears explains the
// waits of every process that hears the pause feed: another process's
// refused Acquire, its Transport's refusal and its Status name the limit,
// the pause's end and the Transport's cause; a process without the feed
// knows the pause from its reply but not its cause. The Limiter, a
// throttle.Observer, passes the Transport's EventPaused on to its own
// observer.
func TestWaitExplainedAcrossFleet(t *testing.T) {
	r := newRig(t)
	limits := []redisbucket.Limit{{Name: "requests", Capacity: 10, Rate: throttle.Per(10, time.Second)}}
	var mu sync.Mutex
	var told []throttle.Event
	obs := observerFunc(func(e redisbucket.Event) {
		if e.Kind == throttle.EventPaused {
			mu.Lock()
			told = append(told, e.Event)
			mu.Unlock()
		}
	})
	// Each r.limiter has a go-redis client of its own: three processes.
	one := r.limiter("explain", limits, redisbucket.WithObserver(obs))
	other := r.limiter("explain", limits)
	deaf := r.limiter("explain", limits, redisbucket.WithoutReservations())
	v := newVendor(t, func(_ int, _ string, w http.ResponseWriter) {
		w.Header().Set("Retry-After", "20")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr := must(httpthrottle.NewTransport(base, httpthrottle.Shared(one), httpthrottle.WithRetries(0)))
	end := r.fc.Now().Add(20 * time.Second)
	if code, err := post(tr, v.srv.URL, "one"); err != nil || code != http.StatusTooManyRequests {
		t.Fatalf("the vendor's answer: %d %v, want 429", code, err)
	}
	const cause = "429 from 127.0.0.1: Retry-After 20s"
	// The cause arrives on other's feed goroutine: wait for it, bounded.
	for deadline := time.Now().Add(10 * time.Second); redisbucket.PauseCauseHeard(other) != cause; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("the cause never reached the other process's feed (it heard %q)", redisbucket.PauseCauseHeard(other))
		}
	}
	for _, c := range []struct {
		name  string
		l     *redisbucket.Limiter
		cause string
	}{{"the process that paused", one, cause}, {"a process on the feed", other, cause}, {"a process off the feed", deaf, ""}} {
		we := refused(t, r, c.l)
		if we.Limit != "requests" || !we.Paused.Equal(end) || we.Cause != c.cause || we.Wait < 20*time.Second {
			t.Errorf("%s: WaitError %+v, want requests paused until %v by %q", c.name, we, end, c.cause)
		}
		calls := c.l.Stats().Calls
		st := c.l.Status(nil)[0]
		if !st.Paused.Equal(end) || st.Cause != c.cause {
			t.Errorf("%s: Status %+v, want paused until %v by %q", c.name, st, end, c.cause)
		}
		if n := c.l.Stats().Calls - calls; n != 0 {
			t.Errorf("%s: Status made %d calls, want none", c.name, n)
		}
	}
	// The other process's Transport explains its refusal the same way.
	trOther := must(httpthrottle.NewTransport(base, httpthrottle.Shared(other), httpthrottle.WithRetries(0)))
	ctx, cancel := clockwork.WithTimeout(context.Background(), r.fc, time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, v.srv.URL, nil)
	var we *throttle.WaitError
	if resp, err := trOther.RoundTrip(req); !errors.As(err, &we) {
		if err == nil {
			resp.Body.Close()
		}
		t.Fatalf("the other Transport: %v, want a *throttle.WaitError", err)
	}
	if we.Limit != "requests" || !we.Paused.Equal(end) || we.Cause != cause {
		t.Errorf("the other Transport's WaitError %+v, want requests paused until %v by %q", we, end, cause)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 || told[0].Limit != "requests" || told[0].Reason != cause || !told[0].Until.Equal(end) {
		t.Errorf("the observer heard %+v, want one EventPaused of requests until %v by %q", told, end, cause)
	}
}

// refused makes an Acquire of l with a deadline 1s away on the rig's
// clock, inside the pause, and returns its refusal.
func refused(t *testing.T, r *rig, l *redisbucket.Limiter) *throttle.WaitError {
	t.Helper()
	ctx, cancel := clockwork.WithTimeout(context.Background(), r.fc, time.Second)
	defer cancel()
	p, err := l.Acquire(ctx, 1)
	var we *throttle.WaitError
	if !errors.As(err, &we) {
		if err == nil {
			p.Settle(1)
		}
		t.Fatalf("Acquire in the pause: %v, want a *throttle.WaitError", err)
	}
	if !strings.Contains(we.Error(), "requests") {
		t.Errorf("WaitError %q does not name the limit", we.Error())
	}
	return we
}

// A refused call counts this process's reserved sleepers ahead of it.
func TestWaitErrorAheadCountsReservedSleepers(t *testing.T) {
	r := newRig(t)
	l := r.limiter("ahead", []redisbucket.Limit{{Name: "requests", Capacity: 1, Rate: throttle.Per(1, time.Second)}},
		redisbucket.WithReservations())
	if ok, err := l.TryAcquire(1); !ok || err != nil {
		t.Fatalf("empty the bucket: %v %v", ok, err)
	}
	done := make(chan error, 1)
	go func() {
		p, err := l.Acquire(context.Background(), 1) // reserved for +1s
		if err == nil {
			p.Settle(1)
		}
		done <- err
	}()
	bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer bcancel()
	if err := r.fc.BlockUntilContext(bctx, 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := clockwork.WithTimeout(context.Background(), r.fc, 100*time.Millisecond)
	defer cancel()
	_, err := l.Acquire(ctx, 1)
	var we *throttle.WaitError
	if !errors.As(err, &we) || we.Ahead != 1 || we.Limit != "requests" {
		t.Fatalf("Acquire behind a reserved sleeper: %v (%+v), want a WaitError on requests with 1 ahead", err, we)
	}
	r.advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A call that would queue in the local line behind a call held by a pause
// that outlasts its deadline is refused at once with the pause's
// explanation, as the line's head is, instead of timing out in the line
// with only the context's error. (Deciding step by step: with
// reservations there is no local line, and the queue is in the wait.)
func TestWaitErrorInLineNamesPause(t *testing.T) {
	r := newRig(t)
	l := r.limiter("inline", []redisbucket.Limit{{Name: "requests", Capacity: 1, Rate: throttle.Per(1, time.Second)}},
		redisbucket.WithoutReservations())
	end := r.fc.Now().Add(20 * time.Second)
	l.PauseUntil(end)
	done := make(chan error, 1)
	go func() {
		p, err := l.Acquire(context.Background(), 1) // holds the line, asleep until the pause's end
		if err == nil {
			p.Settle(1)
		}
		done <- err
	}()
	bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer bcancel()
	if err := r.fc.BlockUntilContext(bctx, 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := clockwork.WithTimeout(context.Background(), r.fc, time.Second)
	defer cancel()
	res := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, 1)
		res <- err
	}()
	var err error
	select {
	case err = <-res:
	case <-bctx.Done():
		t.Fatal("the call still waits in the line; want it refused at once")
	}
	var we *throttle.WaitError
	if !errors.As(err, &we) || we.Limit != "requests" || we.Ahead != 1 || !we.Paused.Equal(end) || we.Wait != 20*time.Second {
		t.Fatalf("Acquire behind the pause: %v (%+v), want a WaitError of 20s on requests, 1 ahead, paused until %v", err, we, end)
	}
	r.advance(21 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A one-limit Limiter's Take (the Transport's) decides on the script's
// fast path, whose reply carries the end of a pause in force too: a
// process off the pause feed reports the pause another stored in the
// WaitError of its first refused call.
func TestFastPathHearsPause(t *testing.T) {
	r := newRig(t)
	limits := []redisbucket.Limit{{Name: "requests", Capacity: 10, Rate: throttle.Per(10, time.Second)}}
	one := r.limiter("fastpause", limits)
	deaf := r.limiter("fastpause", limits)
	// Its first call registers it in the fleet, on the general path.
	if ok, err := deaf.TryAcquire(1); !ok || err != nil {
		t.Fatalf("TryAcquire: %v %v", ok, err)
	}
	end := r.fc.Now().Add(20 * time.Second)
	one.PauseUntil(end)
	ctx, cancel := clockwork.WithTimeout(context.Background(), r.fc, time.Second)
	defer cancel()
	_, err := deaf.Take(ctx, 1)
	var we *throttle.WaitError
	if !errors.As(err, &we) || we.Limit != "requests" || !we.Paused.Equal(end) {
		t.Fatalf("Take in the pause: %v (%+v), want a WaitError on requests paused until %v", err, we, end)
	}
}
