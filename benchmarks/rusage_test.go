package benchmarks

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime returns the user plus system CPU time the whole process has used
// so far, all threads included.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
