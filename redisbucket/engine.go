package redisbucket

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/throttlekit/throttle"
)

// engine is what Bucket and Limiter share: one limiter id, its limits, the
// script calls, the breaker, the failure policy and the local FIFO queue.
type engine struct {
	client redis.UniversalClient
	id     string
	key    string // <prefix>{<id>}
	keys   []string
	seqKey string // key + seqSuffix, built once: reservations send it with every call
	limits []shape
	o      options
	br     *breaker
	cl     *clusterWatch // for a cluster client; nil otherwise
	// guard runs each call in a goroutine of its own and returns at the
	// deadline: the client's context deadlines do not reach its sockets.
	guard bool

	fastArgs [3]any // the fast path's capacity, num and den (limits[0])
	// headroomArg is a reservation's headroom for the wire, µs (WithWireHeadroom).
	headroomArg string
	dl          deadlines

	local   *throttle.Limiter // FailLocal; nil for the other policies
	localBs []*throttle.Bucket

	// line admits one Acquire at a time to call Redis and sleep; the others
	// wait in its FIFO queue. waiting counts the Acquire callers that were
	// refused once, so TryAcquire does not jump ahead of them.
	line    fifo
	waiting atomic.Int64
	share   atomic.Int64 // the fleet count the local buckets are sized for

	seen seen // the levels last seen and what the failure policy granted since
	// tuned is the mask of limits (bit i for limit i < 50) the last reply
	// said run at a server's quota (Limiter.Tune).
	tuned atomic.Int64
	fl    *fleet
	pz    pauses // the latest pause a reply reported, for reserved sleepers
	// causes are the causes told for this process's pauses (pausecause.go)
	causes causeBook
	// sleeping counts this process's reserved sleepers: the calls queued
	// ahead of one refused now (WaitError.Ahead)
	sleeping atomic.Int64
	// carrying is set while a call sends give-backs for sleepers
	// (carryBacks).
	carrying atomic.Bool
	heard    atomic.Int64 // when the last reply's call was sent, local Unix ns
	rc       replyClock   // where a server instant falls on this clock, for sleepers
	batch    batcher      // coalesces concurrent fast-path calls (coalesce.go)
	est      estimates    // what this process's unsettled permits could give back
	feed     pauseFeed    // pauses and slowdowns other processes stored (pausefeed.go)
	slows    tuneMemo     // the shapes reserved sleepers were last stretched for (slowfeed.go)

	st counters
}

type counters struct {
	calls, callErrors, decisions, granted, leaseServed,
	failureDecisions, failureGranted, breakerOpens, stateResets atomic.Int64
}

// Stats counts what a Bucket or Limiter did since it was created.
type Stats struct {
	Calls            int64 // script calls sent to Redis, failed ones included (the constructor's check is not counted); one call may decide several concurrent acquisitions
	CallErrors       int64 // calls that failed or timed out
	Decisions        int64 // TryAcquire and Acquire outcomes (grants and refusals), however taken
	Granted          int64 // decisions that granted
	LeaseServed      int64 // decisions served from leased tokens, without a call
	FailureDecisions int64 // decisions taken by the failure policy
	FailureGranted   int64 // of those, how many granted
	BreakerOpens     int64 // times the circuit breaker opened
	StateResets      int64 // times the script found garbage state and restarted the limits empty
}

func newEngine(client redis.UniversalClient, id string, limits []shape, opts []Option) (*engine, error) {
	if client == nil {
		return nil, errors.New("redisbucket: nil client")
	}
	if id == "" || strings.Contains(id, "}") {
		return nil, fmt.Errorf("redisbucket: limiter id %q must be non-empty and contain no }: it is the key's hash tag", id)
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	e := &engine{
		client: client, id: id, key: o.prefix + "{" + id + "}", limits: limits, o: o,
		br: newBreaker(o.probeMin, o.probeMax, o.patience),
	}
	e.keys = []string{e.key}
	e.seqKey = e.key + seqSuffix
	e.seen.margin, e.seen.shapes = o.callTimeout, limits
	e.headroomArg = strconv.FormatInt(o.headroom.Microseconds(), 10)
	e.batch.max, e.batch.spacing = maxInFlight(client), callSpacing
	// Boxed once: a string put in an interface is an allocation per call.
	e.fastArgs = [3]any{limits[0].args[0], limits[0].args[1], limits[0].args[2]}
	if cc, ok := client.(*redis.ClusterClient); ok {
		e.cl = &clusterWatch{c: cc, key: e.key}
	}
	e.guard = !honoursDeadlines(client)
	if !o.policySet {
		o.policy = FailLocal()
	}
	e.o.policy = o.policy
	e.seen.spends = o.policy.mode != ModeFailClosed
	if o.policy.mode == ModeFailLocal {
		e.localBs, err = o.policy.localBuckets(limits, throttle.WithClock(o.clock))
		if err != nil {
			return nil, err
		}
		if e.local, err = throttle.NewLimiter(e.localBs...); err != nil {
			return nil, err
		}
		if o.fleetTTL > 0 && len(o.policy.rates) < len(limits) {
			e.fl = newFleet(e.key, o.fleetTTL)
		}
	} else if len(o.policy.rates) > 0 {
		return nil, invalidOption("WithFailurePolicy: a policy with rates that is not FailLocal")
	}
	return e, nil
}

func (e *engine) stats() Stats {
	return Stats{
		Calls: e.st.calls.Load(), CallErrors: e.st.callErrors.Load(), Decisions: e.st.decisions.Load(),
		Granted: e.st.granted.Load(), LeaseServed: e.st.leaseServed.Load(),
		FailureDecisions: e.st.failureDecisions.Load(), FailureGranted: e.st.failureGranted.Load(),
		BreakerOpens: e.st.breakerOpens.Load(), StateResets: e.st.stateResets.Load(),
	}
}

// newPermitID returns 128 random bits in hex.
func newPermitID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ctxErr is ctx.Err() without blocking: a clockwork fake-clock context's
// Err blocks until the context is done.
func ctxErr(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
		return nil
	}
}
