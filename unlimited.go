package throttle

// Inf is the rate that never limits, as x/time/rate's Inf: a bucket at
// rate Inf grants every cost at once, whatever its capacity (0 included),
// so that a config can switch a limit off without another code path. It
// still honours PauseUntil, and in a Limiter it still takes its turn in
// the shared FIFO queue. Inf.Tokens() and Inf.Period() are 0.
var Inf = Rate{inf: true}
