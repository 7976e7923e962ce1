// Package htb divides one quota between classes, as Linux traffic
// control's hierarchical token bucket does: every class has a guaranteed
// rate and burst, borrows what its siblings leave unused up to its
// ceiling, and may have classes of its own, to any depth. The quota itself
// is never exceeded, and borrowers that wait share the spare in proportion
// to their guarantees.
//
// [NewQuota] makes the root of a hierarchy, the quota, and [Class.NewClass]
// a class under it from a [Config]. A Class is acquired as a
// throttle.Bucket is (Acquire, TryAcquire, WaitTime), and its AcquirePermit
// returns a Permit as a throttle.Limiter's Acquire does, with the same
// exact integer arithmetic and the same FIFO queue machinery.
//
// Every type, one line each:
//   - [Class]: one node of a hierarchy, with its guarantee and ceiling.
//   - [Config]: the guarantee, burst and ceiling of a class.
//   - [Limiter]: spends on classes of several hierarchies at once, all or
//     nothing; a throttle.Gate, so httpthrottle's Transport and
//     Handler and the gRPC interceptors take it.
//   - [Permit]: the costs granted to classes, settled once the real use is
//     known.
//   - [Keyed]: a class per key under one parent (a tenant, a team), made
//     on first use.
package htb
