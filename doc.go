// Package throttle keeps a program's outgoing calls under the quotas of the
// APIs it calls: requests per second, requests and tokens per minute, per
// API key or per tenant, and whatever the server says in its rate-limit
// headers.
//
// # Buckets
//
// A [Bucket] is a token bucket: [New](capacity, rate) makes one that starts
// full and refills continuously at its [Rate] ([Per] tokens per period),
// never above its capacity. [Bucket.TryAcquire]
// takes tokens only if they are there now, [Bucket.WaitTime] says how long
// until they would be, and [Bucket.Acquire] waits its turn in a FIFO queue,
// honouring its context; when the context's deadline comes before the
// tokens could, it fails at once with a [*WaitError] and spends nothing.
// The arithmetic is exact: tokens are whole int64 units, time is integer
// nanoseconds on a monotonic time line, and the fraction of a token is kept
// as an integer remainder, so every decision equals what exact rational
// arithmetic gives, with no drift. Refill is lazy: a Bucket owns no
// goroutine, ticker or timer. A budget can change while calls are in
// flight: [Bucket.SetRate] and [Bucket.SetCapacity] take effect at once
// and re-time the waiters already queued, and [Bucket.Status] reads the
// state under one lock. Everything that keeps a record of costs (permits,
// reservations, refunds, a pause, a server's count of what is left) is on
// the Limiter, and [NewLimiter](b) makes one over a single bucket. Every
// type takes its time from a clockwork.Clock ([WithClock]),
// so tests drive waits with a fake clock and never sleep.
//
// # Several limits: Limiter
//
// An API usually enforces more than one limit at once: requests per minute
// and tokens per minute, say. [NewLimiter] joins buckets into a [Limiter],
// whose [Limiter.TryAcquire] and [Limiter.Acquire] take one cost per
// bucket, in order, from all of them at the same instant or from none. A
// bucket may belong to several Limiters (a daily token limit shared by two
// models): they share one lock and one FIFO queue, so there is no deadlock.
//
// # After the response: Permit
//
// A call's real cost is often known only from its response (the tokens an
// LLM call used). [Limiter.Acquire] returns a [Permit] for the costs it
// took: [Permit.Settle] refunds what the estimate over-reserved, or charges
// what it missed (the bucket goes into debt, at most one capacity deep,
// repaid from refill before anyone else is served); [Permit.Cancel] gives everything back for a call
// that was never sent.
//
// # One interface: Gate
//
// Every limiter is a [Gate] to the code that calls through it: a
// [Limiter], a key's Limiter of a [Keyed], package htb's Limiter over
// classes, package trtcm's Marker, and redisbucket's Limiter shared by many
// processes. A Gate takes one
// cost per limit ([Gate.Limits] names them): [Gate.Acquire] waits its turn
// and returns a [Permit], [Gate.TryAcquirePermit] never waits, and
// [Gate.WaitTime] says how long a refusal should tell the caller to wait.
// What a Gate can do beyond that is found by a type assertion, never by a
// special case: a [Pauser] can be paused for every caller when a server
// says "wait", a [Leveler] lowered to what a server says is left, a
// [Tuner] lowered to the quota a server says it allows, a [Meter] reports
// each limit's state for a server's answers (an [Admitter] decides and
// reports in one step), and a [Taker] takes costs without a Permit for a
// call that never settles, allocating nothing.
//
// # Per key: Keyed
//
// [NewKeyed] gives every key (an API key, a host, a model, a tenant) its
// own limits, made on the key's first use from a config function that
// returns them as [Limit] values. A [Keyed] holds only the keys in use: a
// key that has refilled to capacity with nobody waiting is exactly a fresh
// key, so it is dropped lazily and made again on its next use, with no
// change in any decision.
//
// # HTTP and gRPC
//
// Package httpthrottle, in this module, puts HTTP clients and servers
// under any Gate: a Transport for http.Client that reads every rate-limit
// header a server sends, pauses the Gate on a 429 and settles LLM calls'
// tokens, a Handler middleware for servers, and Auto, which learns a
// server's limits with no configuration. Module grpcthrottle does the same
// for gRPC.
//
// # Scheduling: Reserve, priorities, pacing, unlimited and closed limits
//
// [Limiter.Reserve] takes a place in the FIFO queue without blocking and
// returns a [Reservation] that says how long to wait, for callers that
// schedule work themselves. [WithPriority] puts a call ahead of lower
// priorities (FIFO within one; no waiter is overtaken more than 16 times).
// A bucket of capacity 1, New(1, rate), spaces calls evenly instead of
// letting a burst through. A [Rate] of [Inf] never limits, by name: a
// period of zero is refused, never taken as unlimited; a capacity of 0
// admits nothing ([ErrCostExceedsCapacity]).
//
// # Sharing a quota between teams, and marking: htb and trtcm
//
// Package htb, in this module, divides one quota between classes, each
// with a guaranteed rate and borrowing what its siblings leave unused
// (Linux's hierarchical token bucket); package trtcm marks calls green,
// yellow or red against a committed and a peak rate (RFC 2698) instead of
// making them wait. Both count with the same exact arithmetic as a Bucket,
// and htb's classes queue their waiters on the same machinery.
//
// # Observing decisions
//
// [WithObserver] reports every decision of a bucket to one or several
// [Observer]s; package slogthrottle logs long waits
// with log/slog, module otelthrottle records OpenTelemetry metrics.
//
// # Every type, one line each
//
// Limits:
//   - [Bucket]: one token bucket, exact and FIFO ([New], [Option]).
//   - [Rate]: whole tokens over a period ([Per]).
//   - [Limiter]: several buckets spent all or nothing ([NewLimiter]).
//   - [Keyed]: a Limiter per key, bounded, made on first use ([Limit]).
//   - [Reservation]: a place in a Limiter's queue, taken without blocking.
//
// What every limiter is:
//   - [Gate]: the interface httpthrottle's Transport and Handler and
//     the gRPC interceptors take; [Permit]: the costs it took, to settle.
//   - [Pauser], [Leveler], [Tuner], [Meter], [Admitter], [Taker]: what a Gate can do
//     beyond it.
//   - [LimitStatus]: the state of one limit, as a Meter reports it.
//   - [WaitError]: a deadline that comes before the turn.
//
// Observing:
//   - [Observer], [Event], [EventKind]: every decision of a bucket.
//
// # Other packages and modules
//
// Packages of this module:
//
//   - github.com/throttlekit/throttle/httpthrottle: the HTTP layer
//     (Transport, Handler, LLM, Auto, the rate-limit headers);
//   - github.com/throttlekit/throttle/htb: classes sharing one quota, each
//     with a guarantee and a ceiling (hierarchical token bucket);
//   - github.com/throttlekit/throttle/trtcm: the two-rate three-color
//     marker of RFC 2698;
//   - github.com/throttlekit/throttle/slogthrottle: long waits logged with
//     log/slog;
//   - github.com/throttlekit/throttle/throttletest: a fake rate-limited
//     vendor on loopback, for tests and demos.
//
// The integrations are modules of their own, so that a program that uses only
// this package inherits none of their dependencies:
//
//   - github.com/throttlekit/throttle/redisbucket shares a bucket or a
//     Limiter between processes through Redis (go-redis v9);
//   - github.com/throttlekit/throttle/otelthrottle records decisions as
//     OpenTelemetry metrics;
//   - github.com/throttlekit/throttle/grpcthrottle puts gRPC clients and
//     servers under the same Gates (grpc-go);
//   - github.com/throttlekit/throttle/cmd/throttle is a command that replays
//     and simulates request traces against limits, and runs a demo.
package throttle
