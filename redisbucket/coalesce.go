package redisbucket

import (
	"context"
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
// A caller that finds fewer calls in flight than the bound leaves at once:
// alone, as without a batcher, or with the acquisitions gathered behind
// the calls in flight. One that finds the bound reached joins the next
// batch, which leaves when a call in flight returns, in its place. The
// bound is the shortest recent round trip over callSpacing, at least 1,
// at most half the client's pool: on a short round trip (loopback, where
// the server's and the client's work per call, not the wire, take the
// time) one call is in flight and decides every acquisition that queued
// behind it, which cuts the work per decision; on a long one (a network of
// 0.2-2 ms) several are, so that a decision waits about one round trip
// instead of two (the one in flight, then its own). The shortest round
// trip, not the average, sets the bound: calls that queue in a busy
// server lengthen the average, and more calls in flight would lengthen it
// more.
//
// Each batch is one script call that decides its members in arrival
// order, each exactly as a call of its own at that server instant (the
// script's batch mode), with one write. Calls in flight at once travel on
// different connections and may reach the server in either order: the
// server decides them in the order it receives them, each atomically on
// its own clock, so every decision is exact, but a decision of a later
// call may be taken before one of an earlier call: arrival order holds
// within a batch, and among Acquire callers that had to wait through the
// local queue (fifo.go), whose head alone calls.
//
// (No timer sends a batch: the runtime's timers can fire later than the
// round trips at stake.)
type batcher struct {
	mu       sync.Mutex
	inflight int       // calls in flight: lone fast-path calls and batches
	max      int       // the most calls in flight: half the client's pool
	next     []*member // waiting for the next batch, in arrival order

	// The shortest round trip of the last 64 to 128 calls: the lower of
	// this window's (cur, n calls so far) and the last one's (prev).
	cur, prev time.Duration
	n         int

	spacing time.Duration // callSpacing; tests change it
	fixed   bool          // tests: the bound is max when spacing is 0, else 1
}

// callSpacing is the round trip per call in flight: a limiter keeps
// about one call in flight per callSpacing of its shortest recent round
// trip. A loopback round trip is mostly the server's and the client's
// work per call, and shorter than callSpacing (benchmarks/README.md,
// BenchmarkRedisRoundTrips): there the bound stays 1, since a second call
// in flight would halve the batches, not the wait. At 0.5 ms and more it
// is half the pool.
const callSpacing = 50 * time.Microsecond

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

// boundLocked returns how many calls may be in flight now.
func (b *batcher) boundLocked() int {
	if b.fixed {
		if b.spacing == 0 {
			return b.max
		}
		return 1
	}
	rtt := b.cur
	if b.prev > 0 && (rtt == 0 || b.prev < rtt) {
		rtt = b.prev
	}
	return min(b.max, max(1, int(rtt/b.spacing)))
}

// decideFast is callFast through the batcher. A caller that joins a batch
// waits for its reply, or for the end of its context or call timeout (the
// same bound as a call of its own: a batch it left may still spend its
// cost, the safe side, as an abandoned call does).
func (e *engine) decideFast(ctx context.Context, local time.Time, now string, hint []byte, sent uint64, cost int64) (result, error) {
	b := &e.batch
	b.mu.Lock()
	if b.inflight == 0 || (len(b.next) == 0 && b.inflight < b.boundLocked()) {
		b.inflight++
		b.mu.Unlock()
		t := time.Now()
		res, err := e.callFast(ctx, local, now, hint, sent, cost)
		if ms := e.returned(time.Since(t)); ms != nil {
			go e.sendBatches(ms)
		}
		return res, err
	}
	m := &member{cost: cost, done: make(chan struct{})}
	b.next = append(b.next, m)
	if b.inflight < b.boundLocked() {
		// Those gathered behind the calls in flight leave now, with m.
		b.inflight++
		ms := b.next
		b.next = nil
		b.mu.Unlock()
		go e.sendBatches(ms)
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

// returned ends a call that took rtt: the acquisitions gathered meanwhile
// leave in its place, and their members are returned for the caller to
// send; nil when none waits.
func (e *engine) returned(rtt time.Duration) []*member {
	b := &e.batch
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == 0 || rtt < b.cur {
		b.cur = rtt
	}
	if b.n++; b.n == 64 {
		b.prev, b.cur, b.n = b.cur, 0, 0
	}
	if len(b.next) == 0 {
		b.inflight--
		return nil
	}
	ms := b.next
	b.next = nil
	return ms
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
	// Only the view: a charge, a give-back or a registration due goes
	// with the next call that is not a fast one.
	hint, sent := e.seen.view(local)
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
	var br batchReply
	general := false
	if err == nil {
		br, general, err = decodeBatch(v, len(live))
	}
	if general {
		for _, m := range live {
			// Each with the view the one before it left.
			local := e.o.clock.Now()
			hint, sent := e.seen.view(local)
			m.res, m.err = e.callFast(ctx, local, now, hint, sent, m.cost)
			close(m.done)
		}
		return
	}
	if err != nil {
		e.st.callErrors.Add(1)
		for _, m := range live {
			m.err = err
			close(m.done)
		}
		return
	}
	for i, m := range live {
		m.res = br.member(i)
	}
	e.seen.set(e.limits, local, br.now(), br.last(), false, carried{}, sent)
	e.rc.sample(e.o.clock.Now(), br.now())
	for _, m := range live {
		close(m.done)
	}
}
