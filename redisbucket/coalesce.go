package redisbucket

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher coalesces the fast path's acquisitions (one limit in µs, no
// permit, charge or registration) that goroutines of this process make
// while calls for the same limiter are in flight, and keeps several such
// calls in flight when decisions come faster than one round trip.
//
// A caller that finds no call in flight calls Redis itself, as without a
// batcher. One that finds calls in flight joins the next batch, which
// leaves
//   - when a call in flight returns (so the calls in flight never drop
//     while decisions wait), or
//   - once gap has passed since the last call left, if fewer than max
//     calls are in flight: on the next arrival, or on a timer armed by the
//     batch's first member. A caller that arrives then with no batch
//     gathering calls alone.
//
// gap is the round trip over max, at least minBatchGap: on a short round
// trip (loopback, where the server's and the client's work per call, not
// the wire, take the time) a batch leaves when a call returns, one call in
// flight deciding every decision that queued behind it, which cuts the
// work per decision; on a long one (a network of 0.2-2 ms) up to max
// batches are in flight, spaced by gap, so that a decision waits about a
// round trip and gap/2 instead of two round trips.
//
// Each batch is one script call that decides its members in arrival
// order, each exactly as a call of its own at that server instant (the
// script's batch mode), with one write. Batches in flight at once travel
// on different connections and may reach the server in either order: the
// server decides them in the order it receives them, each atomically on
// its own clock, so every decision is exact, but a decision of a later
// batch may be taken before one of an earlier batch (FIFO holds within a
// batch, and among Acquire callers through the local queue).
type batcher struct {
	mu       sync.Mutex
	inflight int           // calls in flight: lone fast-path calls and batches
	max      int           // the most calls in flight: half the client's pool
	next     []*member     // waiting for the next batch, in arrival order
	last     time.Time     // when the last call left (real time)
	rtt      time.Duration // a moving average of the calls' round trips
	gen      uint64        // the timer armed for next; a stale one does nothing
	armed    bool

	minGap time.Duration // minBatchGap; tests change it
	fixed  bool          // tests: gap is minGap, whatever the round trip
}

// minBatchGap is the shortest time between two calls that leave while
// others are in flight. A loopback round trip to a busy server is about
// 50-150 µs, most of it the server's and the client's work per call: below
// this a second call in flight would halve the batches, not the latency.
const minBatchGap = 100 * time.Microsecond

// maxInFlight returns the bound on a limiter's calls in flight on client:
// half its pool, so that the limiter leaves connections for the client's
// other uses (go-redis's default pool is 10 per GOMAXPROCS).
func maxInFlight(client redis.UniversalClient) int {
	size := 0
	switch c := client.(type) {
	case *redis.Client:
		size = c.Options().PoolSize
	case *redis.ClusterClient:
		size = c.Options().PoolSize
	case *redis.Ring:
		size = c.Options().PoolSize
	}
	if size <= 0 {
		size = 10 * runtime.GOMAXPROCS(0)
	}
	return max(1, size/2)
}

// member is one acquisition in a batch.
type member struct {
	cost int64
	done chan struct{} // closed when res and err are set
	res  result
	err  error
	gone atomic.Bool // the caller left (its context ended) before the reply
}

// gap returns how long after the last call left another may leave while
// calls are in flight. b.mu is held.
func (b *batcher) gap() time.Duration {
	if b.fixed {
		return b.minGap
	}
	return max(b.rtt/time.Duration(b.max), b.minGap)
}

// takeLocked returns the gathered members for a call leaving at t.
func (b *batcher) takeLocked(t time.Time) []*member {
	ms := b.next
	b.next = nil
	b.last = t
	if b.armed {
		b.armed = false
		b.gen++
	}
	return ms
}

// decideFast is callFast through the batcher. A caller that joins a batch
// waits for its reply, or for the end of its context or call timeout (the
// same bound as a call of its own: a batch it left may still spend its
// cost, the safe side, as an abandoned call does).
func (e *engine) decideFast(ctx context.Context, local time.Time, now string, hint []byte, sent uint64, cost int64) (result, error) {
	b := &e.batch
	t := time.Now()
	b.mu.Lock()
	if b.inflight == 0 || (len(b.next) == 0 && b.inflight < b.max && t.Sub(b.last) >= b.gap()) {
		b.inflight++
		b.last = t
		b.mu.Unlock()
		res, err := e.callFast(ctx, local, now, hint, sent, cost)
		if ms := e.returned(time.Since(t)); ms != nil {
			go e.sendBatches(ms)
		}
		return res, err
	}
	m := &member{cost: cost, done: make(chan struct{})}
	b.next = append(b.next, m)
	if b.inflight < b.max {
		if g := b.gap(); t.Sub(b.last) >= g {
			b.inflight++
			ms := b.takeLocked(t)
			b.mu.Unlock()
			go e.sendBatches(ms)
		} else {
			if !b.armed {
				b.armed = true
				gen := b.gen
				time.AfterFunc(b.last.Add(g).Sub(t), func() { e.gapEnded(gen) })
			}
			b.mu.Unlock()
		}
	} else {
		b.mu.Unlock()
	}
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

// gapEnded sends the gathered batch when the gap since the last call has
// passed and fewer than max calls are in flight; gen names the batch the
// timer was armed for (a call that left since took it).
func (e *engine) gapEnded(gen uint64) {
	b := &e.batch
	b.mu.Lock()
	if !b.armed || b.gen != gen {
		b.mu.Unlock()
		return
	}
	b.armed = false
	if len(b.next) == 0 || b.inflight >= b.max {
		// The batch leaves when a call returns.
		b.mu.Unlock()
		return
	}
	b.inflight++
	ms := b.takeLocked(time.Now())
	b.mu.Unlock()
	e.sendBatches(ms)
}

// returned ends a call that took rtt: the acquisitions gathered meanwhile
// leave in its place, and their members are returned for the caller to
// send; nil when none waits.
func (e *engine) returned(rtt time.Duration) []*member {
	b := &e.batch
	t := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rtt == 0 {
		b.rtt = rtt
	} else {
		b.rtt += (rtt - b.rtt) / 8
	}
	if len(b.next) == 0 {
		b.inflight--
		return nil
	}
	return b.takeLocked(t)
}

// sendBatches sends ms, then the batches that gather meanwhile and leave
// when it returns, until none waits: from a goroutine of its own, so that
// no caller returns later for having sent others' batch.
func (e *engine) sendBatches(ms []*member) {
	for len(ms) > 0 {
		t := time.Now()
		e.sendBatch(ms)
		ms = e.returned(time.Since(t))
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
	hint, _, _, sent := e.seen.get(local)
	if len(live) == 1 {
		m := live[0]
		m.res, m.err = e.callFast(ctx, local, now, hint, sent, m.cost)
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
			hint, _, _, sent := e.seen.get(local)
			m.res, m.err = e.callFast(ctx, local, now, hint, sent, m.cost)
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
	e.seen.set(e.limits, local, at, levels[2*len(live)-2:], nil, sent)
	for _, m := range live {
		close(m.done)
	}
}
