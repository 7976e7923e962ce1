package throttle

// Pace returns a bucket that spaces calls evenly at rate instead of letting
// them through in bursts: a bucket of capacity 1, which is a leaky bucket
// used as a meter. It suits calls to a fragile downstream, which is harmed
// by a burst even when the average is within its quota. Waiting callers
// queue FIFO, as for any Bucket.
//
// The guarantee, for calls of cost 1 and no Charge, Refund or Settle: the
// first call passes at once; after that no two grants are closer than
// rate's interval, Period/Tokens, rounded up to the nanosecond; and while
// callers are queued, each grant comes exactly that rounded interval after
// the one before. With Per(100, time.Second), queued calls leave exactly
// 10 ms apart; with Per(3, time.Second), 333 333 334 ns apart, because a
// full bucket keeps no fraction of a token beyond its capacity of 1. Over
// any stretch of time d, at most 1 + d*Tokens/Period calls pass.
//
// The price is latency: where a bucket of capacity B lets a burst of B go
// at once, Pace makes its k-th call wait (k-1)*Period/Tokens. A cost above
// 1 fails with ErrCostExceedsCapacity; for pacing by tokens rather than
// calls, use New with the capacity of the largest cost. Pace fails for a
// rate New would refuse.
func Pace(rate Rate, opts ...Option) (*Bucket, error) {
	return newBucket("Pace", 1, rate, opts)
}
