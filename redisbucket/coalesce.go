package redisbucket

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// batcher coalesces the fast path's acquisitions (one limit in µs, no
// permit, charge or registration) that goroutines of this process make
// while a call for the same limiter is in flight: they wait, and when the
// call ends one script call decides them all, in arrival order, at one
// server instant (the script's batch mode). A lone caller calls Redis
// itself, as without a batcher; under concurrency the calls per decision
// fall towards 1/k for k waiting goroutines, and so do the round trips and
// the server's work per decision.
type batcher struct {
	mu   sync.Mutex
	busy bool      // a fast-path call or a batch is in flight
	next []*member // waiting for the next batch, in arrival order
}

// member is one acquisition in a batch.
type member struct {
	cost int64
	done chan struct{} // closed when res and err are set
	res  result
	err  error
	gone atomic.Bool // the caller left (its context ended) before the reply
}

// decideFast is callFast through the batcher. A caller that finds a call
// in flight joins the next batch and waits for its reply, or for the end
// of its context or call timeout (the same bound as a call of its own:
// a batch it left may still spend its cost, the safe side, as an
// abandoned call does).
func (e *engine) decideFast(ctx context.Context, local time.Time, now string, hint []byte, cost int64) (result, error) {
	b := &e.batch
	b.mu.Lock()
	if !b.busy {
		b.busy = true
		b.mu.Unlock()
		res, err := e.callFast(ctx, local, now, hint, cost)
		e.handOn()
		return res, err
	}
	m := &member{cost: cost, done: make(chan struct{})}
	b.next = append(b.next, m)
	b.mu.Unlock()
	cctx, cancel := e.callCtx(ctx)
	defer cancel()
	select {
	case <-m.done:
		return m.res, m.err
	case <-cctx.Done():
		m.gone.Store(true)
		return result{}, cctx.Err()
	}
}

// handOn ends a call: the acquisitions that arrived meanwhile go in a
// batch, sent from a goroutine of its own so that no caller returns later
// for having made it; that goroutine sends batches until none waits.
func (e *engine) handOn() {
	b := &e.batch
	b.mu.Lock()
	ms := b.next
	b.next = nil
	if len(ms) == 0 {
		b.busy = false
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	go e.sendBatches(ms)
}

// sendBatches sends ms, then the batches that gather meanwhile, until
// none waits. (A function of its own: ms captured by a closure would be
// moved to the heap on every handOn, the lone caller's included.)
func (e *engine) sendBatches(ms []*member) {
	b := &e.batch
	for len(ms) > 0 {
		e.sendBatch(ms)
		b.mu.Lock()
		ms = b.next
		b.next = nil
		if len(ms) == 0 {
			b.busy = false
		}
		b.mu.Unlock()
	}
}

// sendBatch decides the members still waiting in one script call (one
// alone on the fast path), or each alone when the script says the state
// needs the general path.
func (e *engine) sendBatch(ms []*member) {
	live := ms[:0:0]
	for _, m := range ms {
		if !m.gone.Load() {
			live = append(live, m)
		}
	}
	ctx := context.Background()
	local := e.o.clock.Now()
	now := e.timeArg()
	// Only the view: a charge or a registration due goes with the next
	// call that is not a fast one.
	hint, _, _ := e.seen.get(local)
	if len(live) == 1 {
		m := live[0]
		m.res, m.err = e.callFast(ctx, local, now, hint, m.cost)
		close(m.done)
		return
	}
	if len(live) == 0 {
		return
	}
	args := e.argv(e.keys, 3+len(live))
	args = append(args, e.fastArgs[0], e.fastArgs[1], e.fastArgs[2], live[0].cost, hint, now)
	for _, m := range live[1:] {
		args = append(args, m.cost)
	}
	cctx, cancel := e.callCtx(ctx)
	e.st.calls.Add(1)
	v, err := e.run(cctx, args)
	cancel()
	if err == nil && len(v) == 1 && v[0] == -2 {
		for _, m := range live {
			// Each with the view the one before it left.
			local := e.o.clock.Now()
			hint, _, _ := e.seen.get(local)
			m.res, m.err = e.callFast(ctx, local, now, hint, m.cost)
			close(m.done)
		}
		return
	}
	if err == nil && len(v) != 1+3*len(live) {
		err = fmt.Errorf("redisbucket: script replied %d values to a batch of %d, want %d", len(v), len(live), 1+3*len(live))
	}
	if err != nil {
		e.st.callErrors.Add(1)
		for _, m := range live {
			m.err = err
			close(m.done)
		}
		return
	}
	at := v[0]
	levels := make([]int64, 2*len(live))
	for i, m := range live {
		r := v[1+3*i:]
		levels[2*i] = r[2]
		m.res = result{status: r[0], wait: time.Duration(r[1]) * time.Microsecond, now: at, levels: levels[2*i : 2*i+2 : 2*i+2]}
	}
	e.seen.set(e.limits, local, at, levels[2*len(live)-2:], nil)
	for _, m := range live {
		close(m.done)
	}
}
