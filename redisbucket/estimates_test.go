package redisbucket_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/throttlekit/throttle"
	"github.com/throttlekit/throttle/redisbucket"
)

// A wait past the deadline that only this process's unsettled permits
// make (their costs are estimates) is not refused at once: the call waits
// its turn and is served when they settle, the fake clock standing still.
func TestAcquireOnEstimatesWaitsForSettlement(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []redisbucket.Option
	}{{"decide", nil}, {"reserve", []redisbucket.Option{redisbucket.WithReservations(), redisbucket.WithWireHeadroom(0)}}} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			l := r.limiter("est-"+c.name, rpmTPM, c.opts...)
			ctx := context.Background()
			p, err := l.Acquire(ctx, 1, 100) // tpm empty, 100 of it an estimate
			if err != nil {
				t.Fatal(err)
			}
			dl, cancel := context.WithDeadline(ctx, r.fc.Now().Add(time.Second))
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := l.Acquire(dl, 1, 50) // 30 s on settled levels, 0 if p gives back
				done <- err
			}()
			// Either it sleeps on the fake clock, waiting its turn, or it
			// returned at once.
			bctx, bcancel := context.WithTimeout(ctx, 10*time.Second)
			defer bcancel()
			blocked := make(chan error, 1)
			go func() { blocked <- r.fc.BlockUntilContext(bctx, 1) }()
			select {
			case err := <-done:
				t.Fatalf("refused at once on an estimate: %v", err)
			case err := <-blocked:
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Settle(1, 20); err != nil { // 80 back
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("after the settlement: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("not served after the settlement gave the tokens back")
			}
			got, err := l.Tokens(ctx)
			if err != nil || got[1] != 30 {
				t.Fatalf("tpm %v %v, want 30: 80 given back, 50 taken", got, err)
			}
		})
	}
}

// A wait past the deadline that holds even if every unsettled permit of
// this process gave all its costs back is refused at once, naming the
// limit and that certain wait, and takes nothing.
func TestAcquireOnSettledWaitFailsFast(t *testing.T) {
	r := newRig(t)
	l := r.limiter("settled", rpmTPM)
	ctx := context.Background()
	p1, err := l.Acquire(ctx, 1, 60)
	if err != nil {
		t.Fatal(err)
	}
	if err := p1.Settle(1, 60); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, 1, 40); err != nil { // held unsettled: 40 could come back
		t.Fatal(err)
	}
	dl, cancel := context.WithDeadline(ctx, r.fc.Now().Add(time.Second))
	defer cancel()
	// tpm is empty: 100 take 60 s; with the 40 back, 60 take 36 s at
	// 100 a minute, past the deadline either way.
	_, err = l.Acquire(dl, 1, 100)
	var we *throttle.WaitError
	if !errors.As(err, &we) || we.Limit != "tpm" || we.Wait != 36*time.Second || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want a WaitError of 36s on tpm", err)
	}
	got, err := l.Tokens(ctx)
	if err != nil || got[0] != 1 || got[1] != 0 {
		t.Fatalf("levels %v %v: the refusal took something", got, err)
	}
}

// Take takes costs without a Permit, so nothing it takes counts as an
// estimate: a wait past the deadline behind it is refused at once. Settle
// gives the costs back, never above capacity, and charges an overrun.
func TestLimiterTakerTakeAndSettle(t *testing.T) {
	r := newRig(t)
	l := r.limiter("taker", rpmTPM)
	var _ throttle.Taker = l
	ctx := context.Background()
	if waited, err := l.Take(ctx, 1, 100); err != nil || waited != 0 {
		t.Fatal(waited, err)
	}
	dl, cancel := context.WithDeadline(ctx, r.fc.Now().Add(time.Second))
	defer cancel()
	var we *throttle.WaitError
	if _, err := l.Take(dl, 1, 50); !errors.As(err, &we) || we.Limit != "tpm" || we.Wait != 30*time.Second {
		t.Fatalf("err %v, want a WaitError of 30s on tpm", err)
	}
	none := []int64{0, 0}
	if err := l.Settle([]int64{1, 100}, none); err != nil {
		t.Fatal(err)
	}
	if err := l.Settle([]int64{1, 100}, none); err != nil { // capped at capacity
		t.Fatal(err)
	}
	got, err := l.Tokens(ctx)
	if err != nil || got[0] != 3 || got[1] != 100 {
		t.Fatalf("levels %v %v, want full", got, err)
	}
	if err := l.Settle(none, []int64{0, 130}); err != nil { // a charge, into debt
		t.Fatal(err)
	}
	if got, err := l.Tokens(ctx); err != nil || got[1] != -30 {
		t.Fatalf("levels %v %v after a charge of 130, want -30 tokens", got, err)
	}
	if err := l.Settle([]int64{1}, []int64{0}); !errors.Is(err, throttle.ErrInvalidCost) {
		t.Fatalf("one cost for two limits: %v", err)
	}
}
