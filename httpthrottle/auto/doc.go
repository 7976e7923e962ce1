// Package auto limits an HTTP client to quotas it learns from the server:
// no configuration. [New] makes a [Limiter], an
// httpthrottle.Picker; under an httpthrottle.Transport, which tells
// its Gates of every response (they are httpthrottle.Learners), it keeps
// one learned limiter per quota (per host and credential; [Key]).
//
// The rules, in short (docs/auto.md states each one with its constants):
//   - A limit a response reports with its size is learned, re-tuned on
//     every response: IETF RateLimit-Policy (q per w), OpenAI's and
//     Anthropic's -limit fields (per minute), GitHub's x-ratelimit-limit
//     per x-ratelimit-resource (per hour; its counts exact until the
//     reset). A limit is its name and its window; what is learned is
//     bounded ([MaxQuotas], 64 limits a quota, 16 GitHub resources).
//   - The client takes a share of each quota that tracks the remaining
//     count: others spending it show as a count falling faster than its
//     own spending explains, and clients converge together on the
//     server's rate. Counts the server rounds teach only what their range
//     proves.
//   - Where the server says nothing but 429, the rate is found by
//     congestion control: slow start from [InitialRate], a first cut sized
//     so that any number of clients lands under the quota, later cuts to
//     what the server let through, randomized, and probing growth.
//   - Every rate stays within [Range]; [Within] keeps explicit limits as a
//     ceiling; a quota idle for [Idle] is forgotten; [Fleet] makes the
//     processes of a fleet learn each quota together through a [Store].
//
// [Limiter.Quota] gives the learned Gate of a quota by name, of fixed
// limits: a pool.Pool member whose limits are not configured.
//
// [Limiter.Stats] reports what was learned ([QuotaStats], [LimitStats]);
// [Observer] is told of every change.
package auto
