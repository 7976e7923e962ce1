package throttle

// QueuedFor returns the number of waiters queued on l's buckets, for the
// transport tests of package throttle_test, which drive a fake clock and
// need to know when every goroutine has either finished or queued.
func QueuedFor(l *Limiter) int { return l.bs[0].queued() }
