// Package grpcthrottle puts gRPC calls under the limiters of
// github.com/throttlekit/throttle, on both sides: a Client's interceptors
// take a permit per call from a throttle.Gate and heed what servers say
// when they refuse (codes.ResourceExhausted with google.rpc.RetryInfo and
// google.rpc.QuotaFailure); a Server's interceptors admit or refuse each
// call as httpthrottle.Handler does for HTTP, with an exact RetryInfo.
//
// Both take any throttle.Gate (a Limiter, a Keyed's Limiter, a
// htb.Limiter, a trtcm.Marker) and use its capabilities when it has them:
// throttle.Pauser for a server's delay, throttle.Leveler for a quota the
// server says is spent, throttle.Meter for the status a server reports.
//
// # Which layer retries
//
// grpc-go's retry policy (the service config's retryPolicy) runs below
// the interceptors, inside the ClientConn: an interceptor sees one call per
// logical RPC, and the attempts grpc-go makes for it are invisible to it
// (the server sees them, each after the first carrying
// PreviousAttemptsKey). grpc-go retries a code its policy lists only if
// the server's answer was trailers-only, waiting the server's PushbackKey
// trailer if it sent one, else its own back-off with jitter; it ignores
// RetryInfo, and each attempt waits alone, without taking a permit, so
// the other calls of the Gate keep going meanwhile.
//
// So the Client's interceptor is the layer that retries quota refusals:
// it re-sends a refused unary call after its RetryInfo delay, behind the
// Gate's pause, in FIFO order with the other calls, with a new permit.
// Leave RESOURCE_EXHAUSTED out of retryableStatusCodes, and let grpc-go's
// policy retry what the transport fails (UNAVAILABLE without a RetryInfo,
// which the interceptor never re-sends). If a policy does list the code of
// a refusal, the interceptor does not stack a round of its own on each of
// grpc-go's: it counts each round it sent as the policy's maxAttempts
// (read with ClientConn.GetMethodConfig) and re-sends only while another
// round keeps the call within 1+WithRetries attempts (a policy whose own
// maxAttempts is more still makes them all). Nor does it see the
// refused attempts grpc-go retries, unless grpc.WithStatsHandler installs
// the Client's StatsHandler: each one then pauses the Gate at once, as a
// refusal the interceptor sees does (without it, the Gate keeps releasing
// calls while grpc-go waits to retry, and the server refuses those in
// turn). A Server sets the
// PushbackKey trailer to its exact wait, so that clients relying on
// grpc-go's policy alone wait as long as it says, and ask it not to retry
// a call that can never be admitted.
//
// # Observers and OpenTelemetry
//
// The interceptors emit no events of their own: every decision is the
// Gate's, and its buckets report it to their throttle.Observer
// (throttle.WithObserver, and otelthrottle for OpenTelemetry metrics) as
// for any other caller: a permit granted or a call refused
// (throttle.EventGranted, EventRejected), a permit given back or settled
// (EventSettled), a server's RetryInfo pausing the Gate (EventPaused with
// the pause's end). A Client's congestion control changes its Gates'
// rates without an event: Client.Stats counts the slow-downs and
// recoveries.
package grpcthrottle
