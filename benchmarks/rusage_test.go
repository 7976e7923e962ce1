package benchmarks

import (
	"syscall"
	"testing"
	"time"
)

// usage is what getrusage reports for the whole process, all threads
// included.
type usage struct {
	cpu      time.Duration // user plus system CPU time
	switches int64         // voluntary context switches: a thread went to sleep
}

func readUsage(tb testing.TB) usage {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return usage{
		cpu:      time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		switches: int64(ru.Nvcsw),
	}
}

// rusageThread is Linux's RUSAGE_THREAD, which package syscall does not
// name.
const rusageThread = 1

// threadCPU returns the user plus system CPU time of the calling OS thread;
// ok is false where the system does not report it.
func threadCPU() (cpu time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
