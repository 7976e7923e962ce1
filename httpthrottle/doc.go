// Package httpthrottle puts HTTP clients and servers under the limits of
// package throttle: any [throttle.Gate] (a Limiter, a key's Limiter of a
// Keyed, an htb.Limiter, a trtcm.Marker, redisbucket's Limiter shared by a
// fleet) through one [Transport] and one [Handler].
//
// # HTTP clients: Transport
//
// [NewTransport] wraps an http.RoundTripper so that every request of a
// client takes a permit first, from the [throttle.Gate] that a [Picker]
// chooses: [Shared] for one limiter (any Gate: a Limiter, an htb.Limiter,
// a trtcm.Marker, redisbucket's Limiter for a fleet), [PerKey] with
// [HostKey], [HeaderKey] or llm.ModelKey for one per key, or a [PickFunc]
// of your own. The [Transport] reads every response's rate-limit headers
// (Retry-After, the IETF RateLimit fields, X-RateLimit-*, OpenAI's and
// Anthropic's), lowers the Gate's limits to what the server says is left
// (a [throttle.Leveler]), and on a 429 pauses the whole Gate (a
// [throttle.Pauser]) until the instant the server named, then retries with
// back-off when the request can be replayed; [TransportStats] counts what
// it did. Each [Option] belongs to the Transport or the Handler, but
// [WithCost] (a [CostFunc]) to both; [WithInFlight] caps the requests in
// flight. Nothing is unlimited by default: a nil pick, Shared of a nil
// Gate or a pick returning no Gate is an error; for no limit, use a
// Limiter at rate throttle.Inf.
//
// # Costs settled from the response: Accounting
//
// [WithAccounting] gives a Transport an [Accounting]: the cost of each
// request, what each limit counts (so that a server's "tokens" quota finds
// the limit counting tokens), a check of the Gate's limits, and the
// settlement of each attempt's permit (an [Attempt]) from its response.
// Package github.com/throttlekit/throttle/httpthrottle/llm is the one for
// OpenAI-, Anthropic- and Gemini-style JSON calls: each request reserves
// an estimate of its tokens and is settled to the usage the response
// reports. It lives apart so that a Transport that counts no tokens links
// none of its estimate's image decoders.
//
// # HTTP servers: Handler
//
// [Handler] is the server side: middleware that admits a request the
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
// is a [Picker] that needs no configuration, learning each
// host's quota from its headers, or by congestion control where the server
// says nothing.
package httpthrottle
