// Package testwait holds what the tests of the core and of htb share:
// waiting for a goroutine to queue. It is imported by tests only.
package testwait

import (
	"runtime"
	"testing"
	"time"
)

// Queued waits until queued() differs from before, a goroutine having
// queued, or until returned is closed (the call returned without
// queueing). It fails t after 10 s: a goroutine that never queues is a bug
// of the code under test, not a slow machine.
func Queued(t testing.TB, queued func() int, before int, returned <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for queued() == before {
		select {
		case <-returned:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("waiter never queued")
		}
		runtime.Gosched()
	}
}
