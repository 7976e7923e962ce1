// Package redisbucket shares a token bucket between processes and machines
// through Redis: a fleet of workers that calls one vendor with one API key
// stays under one quota.
//
// A Bucket has the semantics of throttle.Bucket and a Limiter those of
// throttle.Limiter (several limits, all or nothing, with permits to settle
// after the response). Each decision is one Lua script run as go-redis's
// Script.Run does (EVALSHA, then EVAL) on a redis.UniversalClient (a
// single server, Sentinel or Cluster; the script uses only commands Valkey
// has too). The script reads the server's TIME, refills with exact
// integer arithmetic (the rate reduced by its gcd, time in microseconds,
// every intermediate value checked below 2^52 when the limiter is built),
// checks, spends and sets
// the key's expiry to the moment the bucket is full again, since a missing
// key is a full bucket. The state is one string key: a GET and a SET with
// PXAT per decision; a key of another type (a hash of an earlier state
// format, another program's key) is garbage state like any other.
//
// Concurrent acquisitions of one process on one limit counted in
// microseconds (TryAcquire, Acquire, without a permit) are coalesced and
// pipelined. A call leaves at once while fewer calls are in flight than a
// bound: the shortest recent round trip over 50 µs, at least 1, at most
// half the client's pool (PoolSize). Acquisitions that arrive with the
// bound reached wait and go together in the call that leaves when one in
// flight returns, which decides them all, in arrival order, each exactly
// as a call of its own at that server instant would, with one write; each
// waits no longer than its own context and call timeout. So on loopback
// (a round trip of tens of µs, mostly the server's and the client's work)
// one call is in flight and decides everything that queued behind it,
// and over a network (0.2-2 ms) several are and a decision takes about one
// round trip. Calls in flight at once use different connections and may
// reach the server in either order: each decision is exact, taken
// atomically at its own server instant, and arrival order holds within
// one call, not between calls in flight together: two acquisitions that
// arrive within a round trip of each other may be decided in either order
// (Acquire callers that had to wait are served in FIFO order by the local
// queue, one call at a time). Keys are
// <prefix>{<id>}: the hash tag is the limiter's own id, so a cluster
// spreads limiters over its shards.
//
// New and NewLimiter check once that Redis answers for the key and fail
// with an error wrapping ErrUnavailable when it does not, so that a
// mistyped address shows at start; WithStartWithoutRedis starts in failure
// mode instead. When Redis is slow or unreachable later, a per-call
// timeout (kept whatever the client's options) and a circuit breaker hand
// decisions to a FailurePolicy: FailLocal (the default, each process
// taking its share of the fleet it counts in Redis), FailClosed or
// FailOpen; each such decision reaches the observer with its Mode and an
// Err that matches ErrUnavailable. What the policy grants is charged to
// Redis when it answers again, and a key Redis lost comes back from the
// clients' view, not as a fresh full bucket. A recovery is not free of
// bursts, though: until every process's probe has found Redis again (up to
// the probe backoff), processes still on their local shares grant beside
// those back on Redis, and their grants are charged only as each returns,
// so a short window right after a recovery can see about twice what it
// should (docs/redis.md has the figures). Acquire reserves (unless built
// WithoutReservations, which decides again after each sleep): one call
// takes the costs in the fleet's arrival order and
// returns the instant they are covered, and the caller sleeps locally, so
// waiting costs one call per decision whatever the number of waiters (a
// subscription to the id's pauses tells sleepers of a pause another
// process stored; without it, a sleeper asks at its instant). The
// subscription lasts until Close: close every Limiter and Bucket you are
// done with.
// A reservation takes each limit as at its instant, with headroom for the
// calls' way to the API (WithWireHeadroom), so that a fleet sized to an
// API's exact quota does not trip it with a burst from full.
// Lease mode (WithLease) takes
// tokens in batches to cut round trips by about ten at high demand, at the
// price of a looser burst bound.
//
// The tests run against the servers named by THROTTLE_REDIS_ADDR and
// THROTTLE_REDIS_CLUSTER, else against redis-server processes they start on
// free ports, else (no redis-server binary) against miniredis.
package redisbucket
