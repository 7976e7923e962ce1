package benchmarks

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a benchmark or test leaves a goroutine behind:
// the real-clock benchmarks start hundreds of waiters and must stop them all.
func TestMain(m *testing.M) {
	if v := os.Getenv(envProxyChild); v != "" {
		runProxyChild(v)
	}
	if v := os.Getenv(envFleetChild); v != "" {
		runFleetChild(v)
	}
	if v := os.Getenv(envHostChild); v != "" {
		runHostChild(v)
	}
	if v := os.Getenv(envBudgetChild); v != "" {
		runBudgetChild(v)
	}
	if v := os.Getenv(envOKServe); v != "" {
		runOKServe(v)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { stopRedis(); os.Exit(code) }))
}
