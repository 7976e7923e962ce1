// Package pool spreads calls over several Gates that each keep one quota:
// several API keys of one vendor, deployments in several regions, a
// provisioned deployment to fill first and pay-as-you-go ones for overflow.
//
// A Pool is itself a throttle.Gate, so it goes wherever one is taken: by
// hand, under grpcthrottle's interceptors, under httpthrottle's Transport
// (which, given WithRoutes, sends each request through the member that
// served its permit and reacts to the server's answer on that member
// alone). Each call goes to the member that can serve it soonest:
//
//   - among the members that cover the call now, those of the lowest tier,
//     so that a later tier takes only the calls the earlier ones would make
//     wait;
//   - among those, the one with the most headroom: the smallest fraction
//     left of any limit the call costs (read through throttle.Meter; 1 for
//     a member that is no Meter), its use divided by its weight, so that
//     members drain together rather than one after another; among equal
//     headroom, the member that served the fewest calls per unit of weight;
//   - when no member covers the call now, the member whose wait
//     (Gate.WaitTime: its limits, its pause, the calls queued ahead) is the
//     shortest, lower tier first among equal waits.
//
// A member whose quota is exhausted for longer than a pause should last (a
// billing refusal, a quota for the day) is quarantined (Pool.Quarantine)
// until its reset: no call goes to it until then. When every member is
// quarantined, a call waits for the earliest end within its deadline, or
// fails at once with an *UnavailableError naming every member and until
// when.
//
// A Pool is deliberately no throttle.Taker: a caller holds the Permit,
// which names the member that served it (Permit.Member). It is a
// throttle.Meter, whose Status sums the members out of quarantine (so
// Handler over a pool answers with the pool's IETF RateLimit fields,
// and the status page shows it), but no Pauser or Leveler: a server's
// answer concerns one member, and the Transport tells that member.
package pool
