package throttle

import "time"

// QueuedFor returns the number of waiters queued on l's buckets, for the
// transport tests of package throttle_test, which drive a fake clock and
// need to know when every goroutine has either finished or queued.
func QueuedFor(l *Limiter) int { return l.bs[0].queued() }

// SetRefusalWait sets how long t waits for a refusal's body, so that a
// test of a stalled body need not wait the default.
func SetRefusalWait(t *Transport, d time.Duration) { t.refusalWait = d }
