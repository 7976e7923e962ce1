// Package httpthrottle puts HTTP clients and servers under the limits of
// package throttle: any [throttle.Gate] (a Limiter, a key's Limiter of a
// Keyed, an htb.Limiter, a trtcm.Marker, redisbucket's Limiter shared by a
// fleet) through one [Transport] and one [LimitHandler].
//
// # HTTP clients: Transport
//
// [NewTransport] wraps an http.RoundTripper so that every request of a
// client takes a permit first, from the [throttle.Gate] that a [LimiterFunc]
// chooses: [Shared] for one limiter (any Gate: a Limiter, an htb.Limiter,
// a trtcm.Marker, redisbucket's Limiter for a fleet), [PerKey] with [HostKey],
// [HeaderKey] or [ModelKey] for one per key. The [Transport] reads every
// response's rate-limit headers (Retry-After, the IETF RateLimit fields,
// X-RateLimit-*, OpenAI's and Anthropic's), lowers the Gate's limits to
// what the server says is left (a [throttle.Leveler]), and on a 429 pauses the
// whole Gate (a [throttle.Pauser]) until the instant the server named, then retries
// with back-off when the request can be replayed.
// [WithCost] sets what a request costs, [WithInFlight] caps the requests in
// flight. Nothing is unlimited by default: a nil pick, Shared of a nil
// Gate or a pick returning no Gate is an error; for no limit, use a
// Limiter at rate throttle.Inf.
//
// # LLM APIs: LLM
//
// [WithLLM] with an [LLM] value makes a Transport count the tokens of
// OpenAI-style and Anthropic-style JSON calls: each request reserves an
// estimate read from its body, and its permit is settled against the usage
// the response reports. The LLM config says which limit counts requests
// and which tokens (by default those named "requests" and "tokens"); a
// Gate none of whose limits counts tokens is an error, never a count of
// nothing. [LLM.Cost] is the same estimate as a [CostFunc].
//
// # HTTP servers: LimitHandler
//
// [LimitHandler] is the server side: middleware that admits a request the
// chosen Gate covers now and answers any other 429 with the exact
// Retry-After, writing the IETF RateLimit-Policy and RateLimit fields on
// every answer. [RequestPermit] gives the handler the request's Permit, to
// settle against the request's real cost.
//
// # Gates that learn from the server: Learner
//
// A Gate that is a [Learner] is told of every response ([Answer]: the
// status, the [Quota]s the headers reported). Package
// [github.com/throttlekit/throttle/httpthrottle/auto] is one: its Limiter
// method is a [LimiterFunc] that needs no configuration, learning each
// host's quota from its headers, or by congestion control where the server
// says nothing.
//
// # Every type, one line each
//
//   - [Transport], [TransportOption], [TransportStats]: the client side.
//   - [LimiterFunc] picks the Gate of a request ([Shared], [PerKey]);
//     [CostFunc] its costs.
//   - [LimitOption]: the options of [LimitHandler], the server side;
//     [RequestPermit] gives a handler its request's Permit.
//   - [LLM], [Usage], [Tokenizer]: LLM calls' tokens.
//   - [Learner], [Answer], [Quota]: a Gate told of every response, as
//     package auto's are.
package httpthrottle
