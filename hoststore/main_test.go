package hoststore_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the test binary as one of the processes that share a
// store when the parent test started it so (see child_test.go).
func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	goleak.VerifyTestMain(m)
}
