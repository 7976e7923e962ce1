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
// PXAT per decision. Concurrent acquisitions of one process on one limit
// counted in microseconds (TryAcquire, Acquire, without a permit) that
// arrive while its call is in flight are coalesced: the next call decides
// them all, in arrival order, each exactly as a call of its own at that
// server instant would, with one write; each waits no longer than its own
// context and call timeout. Keys are
// <prefix>{<id>}: the hash tag is the limiter's own id, so a cluster
// spreads limiters over its shards.
//
// When Redis is slow or unreachable, a per-call timeout (kept whatever the
// client's options) and a circuit breaker hand decisions to a
// FailurePolicy: FailLocal (the default, each process taking its share of
// the fleet it counts in Redis), FailClosed or FailOpen. What the policy
// grants is charged to Redis when it answers again, and a key Redis lost
// comes back from the clients' view, so a recovery mints no burst. Lease mode (WithLease) takes tokens in batches to
// cut round trips by about ten at high demand, at the price of a looser
// burst bound.
//
// The tests run against the servers named by THROTTLE_REDIS_ADDR and
// THROTTLE_REDIS_CLUSTER, else against redis-server processes they start on
// free ports, else (no redis-server binary) against miniredis.
package redisbucket
