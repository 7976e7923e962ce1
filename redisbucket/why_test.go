package redisbucket_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// whyLimits binds on rpm: one request a second, ten tokens of a hundred.
var whyLimits = []redisbucket.Limit{
	{Name: "rpm", Capacity: 1, Rate: throttle.Per(1, time.Second)},
	{Name: "tpm", Capacity: 100, Rate: throttle.Per(100, time.Minute)},
}

// last returns the latest event of kind the recorder heard for limit.
func (r *recorder) last(t *testing.T, kind throttle.EventKind, limit string) redisbucket.Event {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.ev) - 1; i >= 0; i-- {
		if e := r.ev[i]; e.Kind == kind && e.Limit == limit {
			return e
		}
	}
	t.Fatalf("no %s event of %s among %d", kindName(kind), limit, len(r.ev))
	return redisbucket.Event{}
}

// A refusal's events explain it as its WaitError does: a refused
// TryAcquire's name the binding limit (the pause empties the levels, and
// tpm refills the longest after it), the wait and the pause in force with
// its cause; a refused Acquire's carry the WaitError it returned. A
// call served at once carries none.
func TestEventWhyOfRefusal(t *testing.T) {
	r := newRig(t)
	rec := &recorder{}
	l := r.limiter("whyrefused", whyLimits, redisbucket.WithObserver(rec))
	if ok, err := l.TryAcquire(1, 10); !ok || err != nil {
		t.Fatalf("TryAcquire: %v %v", ok, err)
	}
	if ev := rec.last(t, throttle.EventGranted, "rpm"); ev.Why != nil {
		t.Errorf("a call served at once: Why %+v, want nil", ev.Why)
	}
	end := r.fc.Now().Add(20 * time.Second)
	const cause = "429: Retry-After 20s"
	l.Observe(throttle.Event{Kind: throttle.EventPaused, Limit: "rpm", Until: end, Reason: cause})
	l.PauseUntil(end)

	if ok, err := l.TryAcquire(1, 10); ok || err != nil {
		t.Fatalf("TryAcquire in the pause: %v %v, want refused", ok, err)
	}
	for _, name := range []string{"rpm", "tpm"} {
		ev := rec.last(t, throttle.EventRejected, name)
		// The pause empties every level: tpm's 10 tokens take 6s past it.
		if w := ev.Why; w == nil || w.Limit != "tpm" || w.Wait != ev.Wait || w.Wait != 26*time.Second ||
			!w.Paused.Equal(end) || w.Cause != cause || w.Ahead != 0 {
			t.Errorf("refused TryAcquire, %s's event: Why %+v (event wait %v), want tpm, paused until %v by %q, a wait of 26s",
				name, w, ev.Wait, end, cause)
		}
	}

	ctx, cancel := clockwork.WithTimeout(context.Background(), r.fc, time.Second)
	defer cancel()
	_, err := l.Acquire(ctx, 1, 10)
	var we *throttle.WaitError
	if !errors.As(err, &we) {
		t.Fatalf("Acquire in the pause: %v, want a *throttle.WaitError", err)
	}
	if ev := rec.last(t, throttle.EventRejected, "rpm"); ev.Why != we {
		t.Errorf("refused Acquire: Why %+v, want the WaitError it returned, %+v", ev.Why, we)
	}
}

// A call that waited carries, in its grant's event, the explanation of its
// wait as its first refusal found it: the binding limit and the wait. A
// TryAcquire refused because calls are queued counts them ahead. A call cancelled in
// its wait carries the same explanation in its event.
func TestEventWhyOfWait(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []redisbucket.Option
	}{{"deciding", nil}, {"reserving", []redisbucket.Option{redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0)}}} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			rec := &recorder{}
			l := r.limiter("whywait", whyLimits, append(c.opts, redisbucket.WithObserver(rec))...)
			p, err := l.Acquire(context.Background(), 1, 10)
			if err != nil {
				t.Fatal(err)
			}
			p.Settle(1, 10)
			if ev := rec.last(t, throttle.EventGranted, "rpm"); ev.Why != nil {
				t.Errorf("an Acquire served at once: Why %+v, want nil", ev.Why)
			}
			done := make(chan error, 1)
			go func() {
				p, err := l.Acquire(context.Background(), 1, 10) // waits 1s for rpm
				if err == nil {
					p.Settle(1, 10)
				}
				done <- err
			}()
			bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer bcancel()
			if err := r.fc.BlockUntilContext(bctx, 1); err != nil {
				t.Fatal(err)
			}
			if ok, err := l.TryAcquire(1, 10); ok || err != nil {
				t.Fatalf("TryAcquire behind a waiter: %v %v, want refused", ok, err)
			}
			if w := rec.last(t, throttle.EventRejected, "rpm").Why; w == nil || w.Limit != "rpm" || w.Ahead != 1 {
				t.Errorf("TryAcquire behind a waiter: Why %+v, want rpm with 1 ahead", w)
			}
			r.advance(time.Second)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			ev := rec.last(t, throttle.EventGranted, "rpm")
			if w := ev.Why; w == nil || w.Limit != "rpm" || w.Wait != time.Second || w.Ahead != 0 || !w.Paused.IsZero() {
				t.Errorf("an Acquire that waited 1s: Why %+v, want rpm with a wait of 1s, none ahead, no pause", w)
			}
			if ev := rec.last(t, throttle.EventGranted, "tpm"); ev.Why == nil || ev.Why.Limit != "rpm" {
				t.Errorf("tpm's event of the same grant: Why %+v, want rpm's", ev.Why)
			}
			cctx, ccancel := context.WithCancel(context.Background())
			go func() {
				_, err := l.Acquire(cctx, 1, 10) // waits 1s for rpm, cancelled
				done <- err
			}()
			if err := r.fc.BlockUntilContext(bctx, 1); err != nil {
				t.Fatal(err)
			}
			ccancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled Acquire: %v", err)
			}
			if w := rec.last(t, throttle.EventCancelled, "rpm").Why; w == nil || w.Limit != "rpm" || w.Wait != time.Second {
				t.Errorf("an Acquire cancelled in its wait: Why %+v, want rpm with a wait of 1s", w)
			}
		})
	}
}

// A call that waited in this process's line behind another counts it
// ahead, and its wait runs from its call: its time in the line and the
// wait of its first decision. (Deciding step by step: with reservations
// there is no line, and Ahead counts the reserved sleepers.)
func TestEventWhyInLine(t *testing.T) {
	r := newRig(t)
	rec := &recorder{}
	l := r.limiter("whyline", whyLimits, redisbucket.WithObserver(rec), redisbucket.WithoutReservations())
	if ok, err := l.TryAcquire(1, 10); !ok || err != nil {
		t.Fatalf("TryAcquire: %v %v", ok, err)
	}
	done := make(chan error, 2)
	acquire := func() {
		p, err := l.Acquire(context.Background(), 1, 10)
		if err == nil {
			p.Settle(1, 10)
		}
		done <- err
	}
	go acquire() // the head: asleep 1s for rpm
	bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer bcancel()
	if err := r.fc.BlockUntilContext(bctx, 1); err != nil {
		t.Fatal(err)
	}
	go acquire() // queued behind it
	for redisbucket.LimiterQueued(l) != 1 {
		if bctx.Err() != nil {
			t.Fatal("the second call never queued")
		}
		runtime.Gosched()
	}
	r.advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := r.fc.BlockUntilContext(bctx, 1); err != nil { // the second, asleep 1s at the head
		t.Fatal(err)
	}
	r.advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ev := rec.last(t, throttle.EventGranted, "rpm")
	if w := ev.Why; ev.Wait != 2*time.Second || w == nil || w.Limit != "rpm" || w.Ahead != 1 || w.Wait != 2*time.Second {
		t.Errorf("the call granted after 2s behind another: Why %+v (event wait %v), want rpm, 1 ahead, a wait of 2s", w, ev.Wait)
	}
}

// snapshot returns every key under the rig's prefix with its type and
// value, to tell whether a call wrote.
func snapshot(t *testing.T, r *rig) map[string]string {
	t.Helper()
	ctx := context.Background()
	c := r.be.Client()
	out := map[string]string{}
	keys, err := c.Keys(ctx, r.be.Prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		typ := c.Type(ctx, k).Val()
		var v any
		switch typ {
		case "string":
			v = c.Get(ctx, k).Val()
		case "hash":
			v = c.HGetAll(ctx, k).Val()
		case "zset":
			v = c.ZRangeWithScores(ctx, k, 0, -1).Val()
		case "set":
			v = c.SMembers(ctx, k).Val()
		case "list":
			v = c.LRange(ctx, k, 0, -1).Val()
		}
		out[k] = fmt.Sprintf("%s %v", typ, v)
	}
	return out
}

// Explain answers, before a call, what a refused Acquire's WaitError
// says: the binding limit, the wait, the pause and its cause, with one
// read that writes nothing. With nothing holding the costs its Wait is
// zero.
func TestLimiterExplain(t *testing.T) {
	r := newRig(t)
	l := r.limiter("explainbefore", whyLimits)
	if we, err := l.Explain(1, 10); err != nil || we.Wait != 0 || !we.Paused.IsZero() || we.Ahead != 0 {
		t.Fatalf("Explain of a full Limiter: %+v %v, want no wait", we, err)
	}
	if ok, err := l.TryAcquire(1, 10); !ok || err != nil {
		t.Fatalf("TryAcquire: %v %v", ok, err)
	}
	end := r.fc.Now().Add(20 * time.Second)
	const cause = "maintenance window"
	l.Observe(throttle.Event{Kind: throttle.EventPaused, Limit: "rpm", Until: end, Reason: cause})
	l.PauseUntil(end)

	before, calls := snapshot(t, r), l.Stats().Calls
	we, err := l.Explain(1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if n := l.Stats().Calls - calls; n != 1 {
		t.Errorf("Explain made %d calls, want 1", n)
	}
	if after := snapshot(t, r); !reflect.DeepEqual(before, after) {
		t.Errorf("Explain wrote: before %v, after %v", before, after)
	}
	if we.Limit != "tpm" || we.Wait != 26*time.Second || !we.Paused.Equal(end) || we.Cause != cause || we.Ahead != 0 {
		t.Errorf("Explain in the pause: %+v, want tpm, 26s, paused until %v by %q", we, end, cause)
	}
	ctx, cancel := clockwork.WithTimeout(context.Background(), r.fc, time.Second)
	defer cancel()
	_, err = l.Acquire(ctx, 1, 10)
	var got *throttle.WaitError
	if !errors.As(err, &got) {
		t.Fatalf("Acquire in the pause: %v, want a *throttle.WaitError", err)
	}
	if *got != we {
		t.Errorf("Explain said %+v, Acquire was refused with %+v", we, *got)
	}
}

// While the failure policy decides, a refusal by FailLocal's local limits
// is explained, with their wait, as the script's is; one by FailClosed is
// explained by its Err and carries no Why.
func TestEventWhyFailureModes(t *testing.T) {
	limits := []redisbucket.Limit{{Name: "requests", Capacity: 10, Rate: throttle.Per(10, time.Second)}}
	for _, c := range []struct {
		name   string
		policy redisbucket.FailurePolicy
		mode   redisbucket.Mode
		why    bool
	}{{"FailLocal", redisbucket.FailLocal(), redisbucket.ModeFailLocal, true}, {"FailClosed", redisbucket.FailClosed, redisbucket.ModeFailClosed, false}} {
		t.Run(c.name, func(t *testing.T) {
			r, m := miniRig(t)
			rec := &recorder{}
			l, err := redisbucket.NewLimiter(miniClient(t, m), "whyfail", limits,
				append(r.opts(), redisbucket.WithFailurePolicy(c.policy), redisbucket.WithObserver(rec))...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			m.SetError("LOADING Redis is loading the dataset in memory")
			for range 3 { // FailLocal's tenth: one token
				l.TryAcquire(1)
			}
			ev := rec.last(t, throttle.EventRejected, "requests")
			if ev.Mode != c.mode || ev.Err == nil {
				t.Fatalf("refusal in failure mode: %+v, want mode %v with its Err", ev, c.mode)
			}
			switch w := ev.Why; {
			case !c.why && w != nil:
				t.Errorf("refusal by %s: Why %+v, want nil", c.name, w)
			case c.why && (w == nil || w.Limit != "requests" || w.Wait <= 0 || w.Wait != ev.Wait):
				t.Errorf("refusal by %s: Why %+v (event wait %v), want requests with the event's wait", c.name, w, ev.Wait)
			}
		})
	}
}
